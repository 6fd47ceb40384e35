//! TLS of the HTTP clients the library builds (LLM upstreams, MCP servers, users' MCP servers,
//! their OAuth): rustls, with the aws-lc-rs provider (feature `rustls`, on by default) or the
//! ring provider (feature `rustls-ring`).
//!
//! Decisions:
//! - **Which provider**: reqwest uses rustls's process-wide default provider when one is
//!   installed, else its own, aws-lc-rs, when that is compiled in. With `rustls-ring`,
//!   [`install_provider`] installs ring as the process default before the library builds its
//!   first client (and when a [`ChatService`](crate::ChatService) or
//!   [`McpHub`](crate::McpHub) is made), unless the application installed one first, which is
//!   kept. So with both features on (Cargo unifies features across a build) the clients use
//!   ring too, whichever crate asked for which.
//! - **Why ring is offered**: `aws-lc-sys` compiles AWS-LC (a large C library) in its build
//!   script; ring compiles a few C and assembly files. Both need a C compiler; ring's build is
//!   the smaller one (alone, dev profile, 2 cores: 4.3 s against aws-lc's 18.5 s).
//! - **A client of your own** (`with_http_client`) is yours: with `rustls-ring` alone, call
//!   [`install_provider`] before building it, or reqwest panics saying no provider is set.
//! - With neither feature the clients reach `http://` URLs only (a loopback upstream).
//!
//! ```
//! // Idempotent, and a no-op without `rustls-ring`.
//! lmchatkit::tls::install_provider();
//! lmchatkit::tls::install_provider();
//! ```

/// Installs ring as rustls's process-wide default provider when the `rustls-ring` feature is on
/// and no default is installed yet; otherwise does nothing. Idempotent.
pub fn install_provider() {
    #[cfg(feature = "rustls-ring")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // An error means a default is installed already (the application's): it is kept.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
    }
}

/// `reqwest::Client::builder()`, after [`install_provider`].
#[cfg(any(feature = "openai", feature = "mcp"))]
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder()
}

#[cfg(all(
    test,
    feature = "rustls-ring",
    any(feature = "openai", feature = "mcp")
))]
mod tests {
    use std::io::Read;

    /// With ring as the only provider, a client builds (reqwest panics without a provider) and
    /// its first bytes to an `https://` URL are a TLS handshake record (0x16, TLS 1.x).
    #[tokio::test]
    async fn a_client_built_with_ring_alone_speaks_tls() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/", listener.local_addr().unwrap());
        let seen = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut head = [0u8; 3];
            conn.read_exact(&mut head).map(|_| head)
        });
        let client = super::client_builder()
            .build()
            .expect("a provider is installed");
        let sent = client.get(&url).send();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), sent).await;
        let head = seen.join().unwrap().unwrap();
        assert_eq!((head[0], head[1]), (0x16, 0x03), "{head:?}");
        let provider = rustls::crypto::CryptoProvider::get_default().expect("installed");
        assert!(
            provider
                .cipher_suites
                .iter()
                .eq(rustls::crypto::ring::default_provider()
                    .cipher_suites
                    .iter()),
            "ring is the process default"
        );
    }
}
