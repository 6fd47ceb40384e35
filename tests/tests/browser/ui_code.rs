//! Code blocks and menus in headless Chromium: syntax highlighting by the lazily loaded
//! highlighter (requested only once a code block appears, themed, safe, Copy button), the page
//! without it, and the `aria-activedescendant` of the `/` and `@` menus and the pickers, driven by
//! the keyboard.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::time::Duration;

use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, idle, setup, start_chat, wait_saved};
use lmchatkit_tests::browser::helpers::{setup_with_personas, talk};
use serde_json::{Value, json};

/// Whether the page requested the highlighter script (resource timing, plus the script tag).
async fn highlighter_requests(b: &Browser) -> Value {
    b.js("return [performance.getEntriesByType('resource').filter((e) => e.name.includes('lmchatkit-highlight-')).length, \
          document.querySelectorAll('script[data-lmchatkit-highlighter]').length];")
        .await
}

#[tokio::test]
async fn code_blocks_are_highlighted_by_a_lazily_loaded_highlighter() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    talk(b, "no code here").await;
    assert_eq!(
        highlighter_requests(b).await,
        json!([0, 0]),
        "nothing loaded before a code block"
    );
    let url = b
        .js("return (globalThis.__lmchatkit || {}).highlighter || null;")
        .await;
    assert!(
        url.as_str()
            .is_some_and(|u| u.contains("/chat/assets/lmchatkit-highlight-")),
        "the loader names the highlighter: {url}"
    );
    b.send_text(
        "mirror-back\n```rust\nfn main() { let x = \"<b>\"; }\n```\n\n```python\ndef f():\n    return 2\n```\n\n```nolang\nplain <i>\n```\n",
    )
    .await;
    b.wait_for(".lmck-assistant code.language-rust .hljs-keyword")
        .await;
    b.wait_for(".lmck-assistant code.language-python .hljs-keyword")
        .await;
    idle(b).await;
    // The composer shrinks back to one line once the multi-line draft is sent.
    b.wait_js(
        "the composer to shrink",
        "return document.querySelector('.lmck-input').offsetHeight < 80;",
    )
    .await;
    let rust = b
        .js("return document.querySelector('.lmck-assistant code.language-rust').textContent;")
        .await;
    assert_eq!(
        rust,
        json!("fn main() { let x = \"<b>\"; }\n"),
        "text intact"
    );
    let only_spans = b
        .js("return [...document.querySelectorAll('.lmck-assistant code.lmck-code *')].every((e) => e.tagName === 'SPAN' && [...e.classList].every((c) => /^(hljs-|language-)|_$/.test(c)) && e.attributes.length === 1);")
        .await;
    assert_eq!(only_spans, json!(true), "only hljs spans are added");
    let unknown = b
        .js("return document.querySelector('.lmck-assistant code.language-nolang').innerHTML;")
        .await;
    assert_eq!(unknown, json!("plain &lt;i&gt;\n"));
    // Themed by the UI's own CSS variables (light: --lmck-hl-keyword #cf222e).
    let color = b
        .js("return getComputedStyle(document.querySelector('.lmck-assistant code.language-rust .hljs-keyword')).color;")
        .await;
    assert_eq!(color, json!("rgb(207, 34, 46)"));
    assert_eq!(highlighter_requests(b).await, json!([1, 1]), "loaded once");
    // The block's Copy button copies its code (the text, not the highlight markup).
    b.js("window.__lmckCopied = null; navigator.clipboard.writeText = (t) => { window.__lmckCopied = t; return Promise.resolve(); }; return true;")
        .await;
    b.click(".lmck-assistant .lmck-codeblock:has(code.language-rust) .lmck-copy")
        .await;
    assert_eq!(
        b.js("return window.__lmckCopied;").await,
        json!("fn main() { let x = \"<b>\"; }\n")
    );
    b.wait_text(
        ".lmck-assistant .lmck-codeblock:has(code.language-rust) .lmck-copy",
        "Copied",
    )
    .await;
    b.screenshot("25-highlighted-code").await;
    // Dark theme (System → Light → Dark): the dark palette (--lmck-hl-keyword #ff7b72).
    b.click(".lmck-theme").await;
    b.click(".lmck-theme").await;
    b.wait_js(
        "dark keywords",
        "return getComputedStyle(document.querySelector('.lmck-assistant code.language-rust .hljs-keyword')).color === 'rgb(255, 123, 114)';",
    )
    .await;
    b.screenshot("26-highlighted-code-dark").await;
    // More code, and a reload of the conversation: still one request, highlighted at once.
    b.send_text("mirror-back\n```go\nfunc main() {}\n```\n")
        .await;
    b.wait_for(".lmck-assistant code.language-go .hljs-keyword")
        .await;
    idle(b).await;
    assert_eq!(highlighter_requests(b).await, json!([1, 1]));
    wait_saved(&env, 6).await;
    b.client.refresh().await.unwrap();
    b.wait_for(".lmck-assistant code.language-rust .hljs-keyword")
        .await;
    assert_eq!(highlighter_requests(b).await, json!([1, 1]));
}

#[tokio::test]
async fn without_the_highlighter_code_stays_plain_and_the_page_works() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    // The highlighter's asset is missing (404).
    b.js("globalThis.__lmchatkit.highlighter = new URL('/chat/assets/lmchatkit-highlight-0000000000000000.js', location.href).href; return true;")
        .await;
    b.send_text("mirror-back\n```rust\nfn main() {}\n```\n")
        .await;
    b.wait_text(".lmck-assistant code.language-rust", "fn main() {}")
        .await;
    idle(b).await;
    b.wait_js(
        "the failed request",
        "return performance.getEntriesByType('resource').some((e) => e.name.includes('lmchatkit-highlight-0000'));",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spans = b
        .js("return document.querySelectorAll('.lmck-assistant .hljs-keyword').length;")
        .await;
    assert_eq!(spans, json!(0));
    // The copy button and the next turn still work.
    b.send_message("still working").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
}

/// `aria-activedescendant` of the element matching `css` (`null` when absent).
async fn active_descendant(b: &Browser, css: &str) -> Value {
    b.js(&format!(
        "return document.querySelector({}).getAttribute('aria-activedescendant');",
        serde_json::to_string(css).unwrap()
    ))
    .await
}

/// Whether the element with id `id` is a selected option.
async fn is_selected_option(b: &Browser, id: &str) -> bool {
    b.js(&format!(
        "const o = document.getElementById({}); return !!o && o.getAttribute('role') === 'option' && o.getAttribute('aria-selected') === 'true';",
        serde_json::to_string(id).unwrap()
    ))
    .await
        == json!(true)
}

#[tokio::test]
async fn menus_and_pickers_name_their_active_option() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_with_personas().await else {
        return;
    };
    let b = &env.browser;
    // The model picker: the highlighted option follows ↑/↓.
    b.wait_js(
        "the pickers",
        "return document.querySelectorAll('.lmck-combo-input').length === 2;",
    )
    .await;
    let inputs = b
        .client
        .find_all(fantoccini::Locator::Css(".lmck-combo-input"))
        .await
        .unwrap();
    let model = inputs[1].clone();
    model.click().await.unwrap();
    b.wait_for("#lmck-combo-model").await;
    let css = ".lmck-combo-input[aria-controls='lmck-combo-model']";
    assert_eq!(
        active_descendant(b, css).await,
        json!("lmck-combo-model-opt-0")
    );
    assert!(is_selected_option(b, "lmck-combo-model-opt-0").await);
    model.send_keys("\u{E015}").await.unwrap(); // ArrowDown
    assert_eq!(
        active_descendant(b, css).await,
        json!("lmck-combo-model-opt-1")
    );
    assert!(is_selected_option(b, "lmck-combo-model-opt-1").await);
    assert!(!is_selected_option(b, "lmck-combo-model-opt-0").await);
    model.send_keys("\u{E013}").await.unwrap(); // ArrowUp
    assert_eq!(
        active_descendant(b, css).await,
        json!("lmck-combo-model-opt-0")
    );
    model.send_keys("\u{E00C}").await.unwrap(); // Escape closes the list
    assert_eq!(active_descendant(b, css).await, Value::Null);
    // The persona picker too.
    let persona = inputs[0].clone();
    persona.click().await.unwrap();
    let pcss = ".lmck-combo-input[aria-controls='lmck-combo-persona']";
    assert_eq!(
        active_descendant(b, pcss).await,
        json!("lmck-combo-persona-opt-0")
    );
    persona.send_keys("\u{E015}").await.unwrap();
    assert_eq!(
        active_descendant(b, pcss).await,
        json!("lmck-combo-persona-opt-1")
    );
    persona.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-persona-desc", "Writes code").await;
    assert_eq!(active_descendant(b, pcss).await, Value::Null);
    b.js("document.activeElement.blur(); return true;").await;

    // The `/` menu of the composer.
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    assert_eq!(active_descendant(b, ".lmck-input").await, Value::Null);
    input.send_keys("/").await.unwrap();
    b.wait_for("#lmck-menu").await;
    assert_eq!(
        active_descendant(b, ".lmck-input").await,
        json!("lmck-menu-opt-0")
    );
    assert_eq!(
        b.js("return document.querySelector('.lmck-input').getAttribute('aria-controls');")
            .await,
        json!("lmck-menu")
    );
    assert!(is_selected_option(b, "lmck-menu-opt-0").await);
    input.send_keys("\u{E015}\u{E015}").await.unwrap();
    assert_eq!(
        active_descendant(b, ".lmck-input").await,
        json!("lmck-menu-opt-2")
    );
    assert!(is_selected_option(b, "lmck-menu-opt-2").await);
    let chosen = b.texts("#lmck-menu-opt-2 .lmck-menu-title").await;
    input.send_keys("\u{E013}").await.unwrap();
    assert_eq!(
        active_descendant(b, ".lmck-input").await,
        json!("lmck-menu-opt-1")
    );
    // In a list taller than its box, the selected option is scrolled into view.
    b.js("const s = document.createElement('style'); s.textContent = '.lmck-composer > .lmck-menu { max-height: 4.5rem !important; }'; document.head.appendChild(s); return true;")
        .await;
    let n = b
        .js("return document.querySelectorAll('#lmck-menu [role=option]').length;")
        .await
        .as_u64()
        .unwrap();
    assert!(n >= 5, "{n} options");
    for _ in 1..n - 1 {
        input.send_keys("\u{E015}").await.unwrap();
    }
    let last = format!("lmck-menu-opt-{}", n - 1);
    assert_eq!(active_descendant(b, ".lmck-input").await, json!(last));
    let visible = |id: &str| {
        format!(
            "const m = document.getElementById('lmck-menu').getBoundingClientRect(); \
             const o = document.getElementById('{id}').getBoundingClientRect(); \
             return o.top >= m.top - 1 && o.bottom <= m.bottom + 1;"
        )
    };
    b.wait_js("the last option in view", &visible(&last)).await;
    input.send_keys("\u{E015}").await.unwrap(); // wraps to the first
    b.wait_js("the first option in view", &visible("lmck-menu-opt-0"))
        .await;
    input.send_keys("\u{E00C}").await.unwrap();
    assert_eq!(active_descendant(b, ".lmck-input").await, Value::Null);
    assert!(!chosen.is_empty());
    // The `@` menu.
    input.send_keys("\u{E003}read about @doc").await.unwrap();
    b.wait_text("#lmck-menu", "@docs://readme").await;
    assert_eq!(
        active_descendant(b, ".lmck-input").await,
        json!("lmck-menu-opt-0")
    );
    assert!(is_selected_option(b, "lmck-menu-opt-0").await);
    input.send_keys("\u{E004}").await.unwrap(); // Tab picks
    b.wait_js(
        "the resource to be inserted",
        "return document.querySelector('.lmck-input').value.includes('@docs://readme');",
    )
    .await;
    assert_eq!(active_descendant(b, ".lmck-input").await, Value::Null);
}

/// How often the page fetched the math converter's wasm chunk.
const MATH_FETCHES: &str = "return performance.getEntriesByType('resource').filter((e) => e.name.includes('/split_math-')).length;";

#[tokio::test]
async fn math_renders_as_mathml_from_a_converter_fetched_at_the_first_formula_under_the_page_csp() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.watch_csp_violations().await;
    start_chat(b).await;
    talk(b, "no math here, and $5 is a price").await;
    assert_eq!(
        b.js(MATH_FETCHES).await,
        json!(0),
        "nothing fetched before a formula"
    );
    b.send_text(
        "mirror-back\nEnergy $E = mc^2$ and \\( a^2 + b^2 \\) cost $5 and $10.\n\n\\[\n\\int_0^1 x\\,dx = \\frac{1}{2}\n\\]\n\n\
         $$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$\n\nBroken: $\\frac{1}$ end\n\n`$x$` stays code.",
    )
    .await;
    b.wait_for(".lmck-assistant .lmck-math-display math[display=block]")
        .await;
    idle(b).await;
    let seen = b
        .js("const md = [...document.querySelectorAll('.lmck-assistant .lmck-md')].pop(); \
             const frac = md.querySelector('.lmck-math-display mfrac'); \
             const one = frac.querySelector('mn'); \
             return { \
               inline: md.querySelectorAll('.lmck-math:not(.lmck-math-display) math').length, \
               display: md.querySelectorAll('.lmck-math-display math[display=block]').length, \
               pending: md.querySelectorAll('.lmck-math-pending').length, \
               errors: [...md.querySelectorAll('code.lmck-math-error')].map((c) => [c.textContent, c.title.length > 0]), \
               code: [...md.querySelectorAll('code:not([class])')].map((c) => c.textContent), \
               styled: md.querySelectorAll('[style]').length, \
               prices: md.textContent.includes('cost $5 and $10.'), \
               mathml: [...md.querySelectorAll('math')].every((m) => m.namespaceURI === 'http://www.w3.org/1998/Math/MathML'), \
               stacked: frac.getBoundingClientRect().height > 1.5 * one.getBoundingClientRect().height, \
               aligned: md.querySelectorAll('mtd.lmck-m-left').length, \
             };")
        .await;
    assert_eq!(
        seen,
        json!({
            "inline": 2, "display": 2, "pending": 0,
            "errors": [["$\\frac{1}$", true]],
            "code": ["$x$"],
            "styled": 0, "prices": true, "mathml": true, "stacked": true, "aligned": 2,
        }),
        "formulas laid out as MathML, prices and code left alone"
    );
    assert_eq!(b.js(MATH_FETCHES).await, json!(1), "fetched once");
    // The aligned columns are laid out by the classes standing for math-core's styles: the `=`
    // signs line up.
    let lined_up = b
        .js("const md = [...document.querySelectorAll('.lmck-assistant .lmck-md')].pop(); \
             const eqs = [...md.querySelectorAll('mtd.lmck-m-left mo')].map((o) => o.getBoundingClientRect().left); \
             return eqs.length === 2 && Math.abs(eqs[0] - eqs[1]) < 1;")
        .await;
    assert_eq!(lined_up, json!(true));
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.screenshot("28-math").await;

    // At a phone's width a wide display formula scrolls inside its reply; the page does not.
    b.client.set_window_size(360, 740).await.unwrap();
    b.send_text(&format!(
        "mirror-back\n$${}$$",
        (1..40)
            .map(|i| format!("x_{{{i}}}"))
            .collect::<Vec<_>>()
            .join(" + ")
    ))
    .await;
    b.wait_js(
        "the wide formula",
        "return document.querySelectorAll('.lmck-assistant .lmck-math-display').length === 3;",
    )
    .await;
    idle(b).await;
    let widths = b
        .js("const d = [...document.querySelectorAll('.lmck-assistant .lmck-math-display')].pop(); \
             return [document.documentElement.scrollWidth <= window.innerWidth, d.scrollWidth > d.clientWidth];")
        .await;
    assert_eq!(widths, json!([true, true]), "page fits, formula scrolls");
    assert_eq!(b.js(MATH_FETCHES).await, json!(1), "still fetched once");
}

/// Loads of the diagram frame (`{prefix}/diagram`) the page made (resource timing).
const DIAGRAM_LOADS: &str = "return performance.getEntriesByType('resource').filter((e) => /\\/chat\\/diagram(#|$)/.test(e.name)).length;";

/// What the diagram frame of the `i`th diagram block of the last reply holds (entered and left).
async fn in_diagram_frame(b: &Browser, i: usize) -> Value {
    let frame = b
        .wait_for(&format!(
            ".lmck-assistant:last-of-type .lmck-diagram:nth-of-type({}) > iframe",
            i + 1
        ))
        .await;
    frame.enter_frame().await.unwrap();
    let seen = b
        .js("const svg = document.querySelector('#diagram svg'); \
             const rect = svg && svg.querySelector('.node rect, .node polygon, .node path'); \
             let parentReadable = true; try { void window.parent.document.title; } catch (e) { parentReadable = false; } \
             let cookies = true; try { void document.cookie; } catch (e) { cookies = false; } \
             return { \
               origin: self.origin, parentReadable, cookies, \
               theme: document.documentElement.className, \
               nodes: svg ? svg.querySelectorAll('.node').length : 0, \
               labels: ['Start here', 'Is it ok?', 'Ship it', 'yes'].filter((t) => svg && svg.textContent.includes(t)).length, \
               styled: rect ? getComputedStyle(rect).fill !== 'rgb(0, 0, 0)' : false, \
             };")
        .await;
    b.client.enter_parent_frame().await.unwrap();
    seen
}

#[tokio::test]
async fn a_mermaid_block_is_drawn_in_a_sandboxed_frame_made_only_when_one_appears() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.watch_csp_violations().await;
    start_chat(b).await;
    talk(b, "```js\nlet a = 1;\n```").await;
    assert_eq!(
        b.js(DIAGRAM_LOADS).await,
        json!(0),
        "no frame before a diagram"
    );
    b.send_text(
        "mirror-back\nA flow:\n\n```mermaid\nflowchart LR\n  A[Start here] --> B{Is it ok?}\n  B -- yes --> C[Ship it]\n```\n\n\
         Broken:\n\n```mermaid\nflowchart LR\n  A --> ((( nope\n```\n",
    )
    .await;
    b.wait_for(".lmck-assistant .lmck-diagram.lmck-diagram-ready")
        .await;
    b.wait_for(".lmck-assistant .lmck-diagram.lmck-diagram-failed")
        .await;
    idle(b).await;
    let seen = b
        .js("const md = [...document.querySelectorAll('.lmck-assistant .lmck-md')].pop(); \
             const [ok, bad] = md.querySelectorAll('.lmck-diagram'); \
             const frame = ok.querySelector('iframe'); \
             const shown = (el) => !!el && getComputedStyle(el).display !== 'none' && getComputedStyle(el).visibility !== 'hidden'; \
             return { \
               blocks: md.querySelectorAll('.lmck-diagram').length, \
               sandbox: frame.getAttribute('sandbox'), \
               tall: +frame.getAttribute('height') > 60, \
               frameShown: shown(frame), codeShown: shown(ok.querySelector('pre')), \
               toggle: shown(ok.querySelector('.lmck-diagram-toggle')), \
               badFrames: bad.querySelectorAll('iframe').length, \
               badCode: shown(bad.querySelector('pre')) && bad.querySelector('pre code').textContent.includes('((( nope'), \
               badToggle: shown(bad.querySelector('.lmck-diagram-toggle')), \
               message: bad.querySelector('.lmck-diagram-error').textContent, \
               styled: md.querySelectorAll('[style]').length, \
             };")
        .await;
    let message = seen["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.starts_with("The diagram could not be drawn: ") && message.len() > 40,
        "the parser's message: {message}"
    );
    let mut seen = seen;
    seen["message"] = json!("…");
    assert_eq!(
        seen,
        json!({
            "blocks": 2, "sandbox": "allow-scripts", "tall": true,
            "frameShown": true, "codeShown": false, "toggle": true,
            "badFrames": 0, "badCode": true, "badToggle": false, "message": "…", "styled": 0,
        }),
        "the diagram drawn in its frame, the broken one left as code with the parser's message"
    );
    let loads = b.js(DIAGRAM_LOADS).await.as_u64().unwrap_or(0);
    assert!((1..=2).contains(&loads), "one frame per diagram: {loads}");
    let inside = in_diagram_frame(b, 0).await;
    assert_eq!(
        inside,
        json!({
            "origin": "null", "parentReadable": false, "cookies": false, "theme": "light",
            "nodes": 3, "labels": 4, "styled": true,
        }),
        "drawn by Mermaid in an opaque origin that cannot reach the chat"
    );
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.screenshot("29-diagram").await;

    // "Source" shows the code again, and hides it again.
    let toggled = "const ok = document.querySelector('.lmck-assistant .lmck-diagram.lmck-diagram-ready'); \
                   const t = ok.querySelector('.lmck-diagram-toggle'); \
                   return [t.getAttribute('aria-pressed'), getComputedStyle(ok.querySelector('pre')).display !== 'none', \
                           getComputedStyle(ok.querySelector('iframe')).display !== 'none'];";
    b.click(".lmck-assistant .lmck-diagram-ready .lmck-diagram-toggle")
        .await;
    assert_eq!(b.js(toggled).await, json!(["true", true, false]));
    b.click(".lmck-assistant .lmck-diagram-ready .lmck-diagram-toggle")
        .await;
    assert_eq!(b.js(toggled).await, json!(["false", false, true]));
    assert_eq!(b.axe_violations().await, Vec::<String>::new());

    // A new theme draws the diagram again in it.
    b.click(".lmck-theme").await; // system (light here) → light
    b.click(".lmck-theme").await; // → dark
    b.wait_for(".lmck-assistant .lmck-diagram.lmck-diagram-ready[data-theme=dark]")
        .await;
    assert_eq!(in_diagram_frame(b, 0).await["theme"], json!("dark"));

    // At a phone's width the diagram fits its reply.
    b.client.set_window_size(360, 740).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let fits = b
        .js("const f = document.querySelector('.lmck-assistant .lmck-diagram-ready iframe'); \
             return [document.documentElement.scrollWidth <= window.innerWidth, f.getBoundingClientRect().width <= window.innerWidth];")
        .await;
    assert_eq!(fits, json!([true, true]));
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}
