//! The crates as a user gets them from crates.io: built from the `.crate` files that
//! `./scripts/package.sh` leaves in `target/package/`, unpacked into a fresh folder, with
//! nothing of the repository on the way. A fresh crate depends on `lmchatkit` by version and
//! `[patch.crates-io]` points the name at the unpacked package; everything else comes from
//! crates.io. The builds run with a `PATH` on which trunk, wasm-bindgen, wasm-opt, wasm-split,
//! node and npm each fail loudly when called, and without the rustup proxies (cargo and rustc
//! come from the toolchain's own folder), so the packages prove they need none of them.
//!
//! A binary of its own, outside `cargo test`'s default set (`--test packaged`): it runs cargo,
//! so `scripts/test.sh` runs it beside the other tests, and each cargo run holds
//! `lmchatkit_tests::quiet::shared` so no timed test measures during a build. `scripts/test.sh`
//! packages first and sets `LMCHATKIT_EXPECT_PACKAGES`, so missing packages fail there;
//! elsewhere the tests say why they skip.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The crates published together, in dependency order.
const CRATES: [&str; 3] = ["lmchatkit-protocol", "lmchatkit", "lmchatkit-app"];
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Tools a build from the packages must never run.
const FORBIDDEN: [&str; 7] = [
    "trunk",
    "wasm-bindgen",
    "wasm-opt",
    "wasm-split",
    "wasm-split-cli",
    "node",
    "npm",
];
/// Cargo runs one at a time (they share a target folder).
static CARGO: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// Where the consumer builds: unpacked packages, the fresh crate, the installed app and the
/// shared target folder, outside the repository (a package inside it would find the
/// repository's workspace). It stays between runs, and a package is unpacked again only when
/// it changed, so a second run with the same packages rebuilds nothing.
fn consumer_root() -> PathBuf {
    std::env::temp_dir().join("lmchatkit-consumer")
}

/// The unpacked packages (name → folder), or `None` when they were not made (a failure when
/// `LMCHATKIT_EXPECT_PACKAGES` is set).
fn unpacked() -> Option<(PathBuf, Vec<(String, PathBuf)>)> {
    let dir = target_dir().join("package");
    let files: Vec<PathBuf> = CRATES
        .iter()
        .map(|c| dir.join(format!("{c}-{VERSION}.crate")))
        .collect();
    if let Some(missing) = files.iter().find(|f| !f.is_file()) {
        let expected = std::env::var("LMCHATKIT_EXPECT_PACKAGES").is_ok_and(|v| v == "1");
        assert!(
            !expected,
            "LMCHATKIT_EXPECT_PACKAGES is set but {} is missing: run ./scripts/package.sh",
            missing.display()
        );
        eprintln!(
            "SKIPPED: {} is missing (./scripts/package.sh makes it)",
            missing.display()
        );
        return None;
    }
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    // A build takes both cores: no timed test measures meanwhile (this binary runs beside the
    // others, scripts/test.sh).
    let _noisy = lmchatkit_tests::quiet::shared();
    let root = consumer_root();
    let packages = root.join("packages");
    std::fs::create_dir_all(&packages).unwrap();
    let mut out = Vec::new();
    for (name, file) in CRATES.iter().zip(&files) {
        let dir = packages.join(format!("{name}-{VERSION}"));
        // The same package as last time (byte for byte: cargo packs reproducibly) is left as
        // it was unpacked: unpacking again would give it new times, and cargo would build it
        // again.
        let last = packages.join(format!("{name}-{VERSION}.crate"));
        let this = std::fs::read(file).unwrap();
        if dir.is_dir() && std::fs::read(&last).is_ok_and(|l| l == this) {
            out.push((name.to_string(), dir));
            continue;
        }
        // A file the new package no longer has must not linger.
        let _ = std::fs::remove_dir_all(&dir);
        // `-m`: the files get the time of unpacking, not the fixed one cargo packs them with,
        // so cargo sees a changed package as changed.
        let status = Command::new("tar")
            .arg("-xzmf")
            .arg(file)
            .arg("-C")
            .arg(&packages)
            .status()
            .unwrap();
        assert!(status.success(), "unpacking {}", file.display());
        std::fs::write(&last, this).unwrap();
        out.push((name.to_string(), dir));
    }
    Some((root, out))
}

/// A `PATH` with the toolchain's own cargo and rustc, the system's C compiler (SQLite and the
/// TLS library build C), and a first folder whose forbidden tools fail when run.
fn clean_path(trap: &Path) -> String {
    std::fs::create_dir_all(trap).unwrap();
    for tool in FORBIDDEN {
        let p = trap.join(tool);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"the packaged build ran {tool}, which it must not need\" >&2\nexit 97\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    format!(
        "{}:{}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        trap.display(),
        sysroot.trim()
    )
}

/// `cargo` with `args` in `dir`, on the clean `PATH`, none of this test's own cargo settings,
/// the shared consumer target folder and the workspace's build folder; panics with its output
/// when it fails.
fn cargo(dir: &Path, path: &str, args: &[&str]) {
    let (ok, stderr) = cargo_output(dir, path, args);
    assert!(ok, "cargo {args:?} failed:\n{stderr}");
}

/// [`cargo`]'s run: whether it succeeded, and what it wrote to stderr.
fn cargo_output(dir: &Path, path: &str, args: &[&str]) -> (bool, String) {
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("cargo");
    for (key, _) in std::env::vars() {
        let keep = key == "CARGO_HOME" || key == "CARGO_TERM_COLOR";
        if (key.starts_with("CARGO") || key.starts_with("RUST")) && !keep {
            cmd.env_remove(key);
        }
    }
    let started = Instant::now();
    let out = cmd
        .current_dir(dir)
        .args(args)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", consumer_root().join("target"))
        // The workspace's intermediate builds (Cargo's `build-dir`): what the consumer builds
        // like the workspace (the same crate, version, features and profile, such as the proc
        // macros and the C of aws-lc-sys and SQLite) is built once. Its binaries still land in
        // its own target folder, so the packaged app never replaces the workspace's.
        .env("CARGO_BUILD_BUILD_DIR", target_dir())
        .env("CARGO_INCREMENTAL", "0")
        // What is tested is that it builds and serves; debug info would only cost time.
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .output()
        .unwrap();
    eprintln!(
        "cargo {} took {:.0} s",
        args.join(" "),
        started.elapsed().as_secs_f64()
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh crate at `dir` depending on `lmchatkit` (its default features; `lmchatkit` set, that
/// TOML value instead) and on what `extra` adds, with the library's names patched to `patch`
/// (name, folder).
fn fresh_crate(
    dir: &Path,
    name: &str,
    lmchatkit: Option<&str>,
    extra: &str,
    patch: &[(String, PathBuf)],
) {
    let lmchatkit = lmchatkit.map_or_else(|| format!("\"{VERSION}\""), str::to_owned);
    let patch: String = patch
        .iter()
        .map(|(name, dir)| format!("{name} = {{ path = {:?} }}\n", dir.display().to_string()))
        .collect();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\nlmchatkit = {lmchatkit}\n{extra}\n\
             [patch.crates-io]\n{patch}\n[workspace]\n"
        ),
    )
    .unwrap();
    // The versions CI tests are the lock file's: a fresh crate starts from it (cargo drops
    // what it does not use), as an application pins what it tested.
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
}

/// A child killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` and returns it with the first line it prints that holds `http://`.
fn start(mut cmd: Command) -> (Running, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("it printed its URL")
            .expect("stdout reads");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_owned();
        }
    };
    (running, url)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// The page, the stable loader, the JS glue and the wasm it names (with their content types,
/// brotli when asked), served below `base` (the mount point, no trailing `/`).
async fn serves_the_ui(base: &str) {
    let http = client();
    let page = http.get(base).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("data-lmchatkit"), "{html}");
    assert!(html.contains("assets/lmchatkit.js"), "{html}");

    let loader = http
        .get(format!("{base}/assets/lmchatkit.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(loader.status(), 200);
    assert_eq!(
        loader.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let loader = loader.text().await.unwrap();
    assert!(
        !loader.contains("not built"),
        "the packaged crate serves the not-built loader: {loader}"
    );
    let hashed = |ext: &str| {
        loader
            .split(['"', '\'', '`'])
            .find(|s| s.starts_with("./lmchatkit-web-") && s.ends_with(ext))
            .unwrap_or_else(|| panic!("the loader names no {ext}: {loader}"))
            .trim_start_matches("./")
            .to_owned()
    };
    let (glue, wasm) = (hashed(".js"), hashed("_bg.wasm"));

    let js = http
        .get(format!("{base}/assets/{glue}"))
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );

    let plain = http
        .get(format!("{base}/assets/{wasm}"))
        .header("accept-encoding", "identity")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 200);
    assert_eq!(plain.headers()["content-type"], "application/wasm");
    let bytes = plain.bytes().await.unwrap();
    assert!(bytes.starts_with(b"\0asm"), "a wasm module");

    let br = http
        .get(format!("{base}/assets/{wasm}"))
        .header("accept-encoding", "br")
        .send()
        .await
        .unwrap();
    assert_eq!(br.status(), 200);
    assert_eq!(br.headers()["content-type"], "application/wasm");
    assert_eq!(br.headers()["content-encoding"], "br");
    let compressed = br.bytes().await.unwrap();
    assert!(
        compressed.len() < bytes.len() / 2,
        "brotli: {} of {} bytes",
        compressed.len(),
        bytes.len()
    );
}

/// One chat turn with the demo model over HTTP: text, then `done`.
async fn chats(base: &str) {
    let http = client();
    let models: Value = http
        .get(format!("{base}/api/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let model = models[0]["id"].as_str().expect("a model").to_owned();
    let res = http
        .post(format!("{base}/api/chat"))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hello"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    let events = lmchatkit_tests::serve::sse_data(&text);
    assert!(events.iter().any(|e| e["type"] == "delta"), "{text}");
    assert_eq!(events.last().unwrap()["type"], "done", "{text}");
}

/// A fresh crate at `dir` (`name`, and its `lmchatkit` dependency as [`fresh_crate`] takes it)
/// that serves the library with axum on tokio, its `main.rs` being `main`; the library's packages
/// are patched in.
fn axum_consumer(
    crates: &[(String, PathBuf)],
    dir: &Path,
    (name, lmchatkit): (&str, Option<&str>),
    main: &str,
) {
    let libs: Vec<_> = crates
        .iter()
        .filter(|(name, _)| name != "lmchatkit-app")
        .cloned()
        .collect();
    fresh_crate(
        dir,
        name,
        lmchatkit,
        "axum = \"0.8\"\ntokio = { version = \"1\", features = [\"macros\", \"rt-multi-thread\", \"net\"] }\n",
        &libs,
    );
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
}

const CONSUMER_MAIN: &str = r#"use lmchatkit::llm::DemoModel;
use lmchatkit::{ChatService, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    assert!(lmchatkit::ui_embedded(), "the UI is embedded");
    let chat = ChatService::new(Config::builder(DemoModel::new()).prefix("/chat").build()?);
    let app = axum::Router::new().nest_service("/chat", chat);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/chat", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_crate_mounting_the_packaged_library_serves_the_ui_and_a_chat_turn() {
    let Some((root, crates)) = unpacked() else {
        return;
    };
    let consumer = root.join("crate");
    axum_consumer(&crates, &consumer, ("consumer", None), CONSUMER_MAIN);
    let dir = consumer.clone();
    let path = clean_path(&root.join("trap"));
    tokio::task::spawn_blocking(move || cargo(&dir, &path, &["build", "-j2"]))
        .await
        .unwrap();

    let bin = root.join("target/debug/consumer");
    let (_server, url) = start(Command::new(bin));
    serves_the_ui(&url).await;
    chats(&url).await;
    // Nothing of the repository was read: the lock file names the unpacked packages.
    let lock = std::fs::read_to_string(consumer.join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"lmchatkit\""), "{lock}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_installed_from_its_package_serves_the_whole_ui() {
    let Some((root, crates)) = unpacked() else {
        return;
    };
    let (_, app) = crates.iter().find(|(n, _)| n == "lmchatkit-app").unwrap();
    // `cargo install --path` resolves afresh, as `cargo install lmchatkit-app` does (it reads
    // no lock file without `--locked`), and reads no `[patch]` of the package itself: a config
    // file beside it points the library's names at the unpacked packages.
    let patch: String = crates
        .iter()
        .filter(|(name, _)| name != "lmchatkit-app")
        .map(|(name, dir)| format!("{name} = {{ path = {:?} }}\n", dir.display().to_string()))
        .collect();
    std::fs::create_dir_all(app.join(".cargo")).unwrap();
    std::fs::write(
        app.join(".cargo/config.toml"),
        format!("[patch.crates-io]\n{patch}"),
    )
    .unwrap();
    let path = clean_path(&root.join("trap"));
    let install = root.join("installed");
    let (dir, at) = (app.clone(), install.display().to_string());
    tokio::task::spawn_blocking(move || {
        cargo(
            &dir,
            &path,
            &[
                "install", "--path", ".", "--debug", "--force", "--root", &at, "-j2",
            ],
        )
    })
    .await
    .unwrap();

    let mut cmd = Command::new(install.join("bin/lmchatkit"));
    cmd.args(["--listen", "127.0.0.1:0", "--db", "memory:"]);
    for (key, _) in std::env::vars() {
        if key.starts_with("LMCHATKIT_") || key.starts_with("OPENAI_") {
            cmd.env_remove(key);
        }
    }
    let (_app, url) = start(cmd);
    assert!(!url.contains('?'), "no sign-in token on loopback: {url}");
    let base = url.trim_end_matches('/');
    serves_the_ui(base).await;
    chats(base).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packaged_library_without_its_bundle_does_not_compile_and_says_why() {
    let Some((root, crates)) = unpacked() else {
        return;
    };
    // The library's package as a registry copy that somehow lost its bundle.
    let (_, lib) = crates.iter().find(|(n, _)| n == "lmchatkit").unwrap();
    let bare = root.join("bare-lmchatkit");
    // Made again only when the package changed (new times would make cargo run it again).
    let (made_from, package) = (
        root.join("bare-lmchatkit.crate"),
        root.join(format!("packages/lmchatkit-{VERSION}.crate")),
    );
    let same = std::fs::read(&made_from).ok() == std::fs::read(&package).ok();
    if !same || !bare.is_dir() {
        let _ = std::fs::remove_dir_all(&bare);
        let status = Command::new("cp")
            .arg("-r")
            .arg(lib)
            .arg(&bare)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::remove_dir_all(bare.join("assets")).unwrap();
        std::fs::create_dir(bare.join("assets")).unwrap();
        std::fs::copy(&package, &made_from).unwrap();
    }
    let mut libs: Vec<_> = crates
        .iter()
        .filter(|(name, _)| name == "lmchatkit-protocol")
        .cloned()
        .collect();
    libs.push(("lmchatkit".into(), bare));
    let dir = root.join("bare-crate");
    fresh_crate(&dir, "bare", None, "", &libs);
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() { println!(\"{}\", lmchatkit::ui_embedded()); }\n",
    )
    .unwrap();
    let path = clean_path(&root.join("trap"));
    let (ok, stderr) =
        tokio::task::spawn_blocking(move || cargo_output(&dir, &path, &["build", "-j2"]))
            .await
            .unwrap();
    assert!(!ok, "a package without its bundle built");
    assert!(
        stderr.contains("this copy of the lmchatkit crate carries no UI bundle"),
        "{stderr}"
    );
}

/// A consumer with `rustls-ring` alone: its OpenAI-compatible upstream is on the URL its first
/// argument names.
const RING_CONSUMER_MAIN: &str = r#"use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::{ChatService, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let upstream = std::env::args().nth(1).ok_or("the upstream's URL")?;
    let backend = OpenAiBackend::new(OpenAiConfig::new(upstream).with_api_key("sk-ring"));
    let chat = ChatService::new(Config::builder(backend).prefix("/chat").build()?);
    let app = axum::Router::new().nest_service("/chat", chat);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/chat", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
"#;

/// The `rustls-ring` feature as a user turns it on: the library without its default TLS, built
/// from its package. aws-lc-sys is nowhere in the build, ring is, and the library's client
/// speaks TLS (its first bytes to an `https://` upstream are a TLS handshake record: 0x16, then
/// TLS 1.x), which with no provider compiled in but ring means ring (reqwest panics when it
/// has none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_crate_with_rustls_ring_alone_has_no_aws_lc_and_speaks_tls() {
    let Some((root, crates)) = unpacked() else {
        return;
    };
    let consumer = root.join("ring-crate");
    let lib = format!(
        "{{ version = \"{VERSION}\", default-features = false, features = [\"openai\", \"rustls-ring\"] }}"
    );
    axum_consumer(
        &crates,
        &consumer,
        ("ring-consumer", Some(&lib)),
        RING_CONSUMER_MAIN,
    );
    let path = clean_path(&root.join("trap"));
    let dir = consumer.clone();
    let (aws_lc, ring) = tokio::task::spawn_blocking(move || {
        cargo(&dir, &path, &["build", "-j2"]);
        (
            cargo_output(&dir, &path, &["tree", "-i", "aws-lc-sys"]),
            cargo_output(&dir, &path, &["tree", "-i", "ring"]),
        )
    })
    .await
    .unwrap();
    assert!(
        !aws_lc.0 && aws_lc.1.contains("did not match any packages"),
        "aws-lc-sys is in the build: {}",
        aws_lc.1
    );
    assert!(ring.0, "ring is not in the build: {}", ring.1);

    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_url = format!("https://{}/v1", upstream.local_addr().unwrap());
    let (first_bytes, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let Ok((mut conn, _)) = upstream.accept() else {
            return;
        };
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = [0u8; 3];
        let _ = first_bytes.send(conn.read_exact(&mut head).map(|_| head));
    });
    let mut cmd = Command::new(root.join("target/debug/ring-consumer"));
    cmd.arg(&upstream_url);
    let (_server, url) = start(cmd);
    // The model menu lists the upstream's models: a request to `{upstream}/models`.
    let _ = client().get(format!("{url}/api/models")).send().await;
    let head = seen
        .recv_timeout(Duration::from_secs(30))
        .expect("the library called its upstream")
        .expect("the upstream read the client's first bytes");
    assert_eq!((head[0], head[1]), (0x16, 0x03), "{head:?}");
}
