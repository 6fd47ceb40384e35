//! Highlighting of closed fenced code blocks ([`super::highlight`]) with a stand-in highlighter:
//! only closed fences with a language, safe output only, the same result streamed or not,
//! each code highlighted once, and a late highlighter upgrading what was rendered before.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::highlight::{self, fence_closed, is_safe_highlight};
use super::tests::assert_safe;
use super::tests_incremental::{CORPUS, long_reply, stream_and_check};
use super::*;

/// Restores the thread's highlighter state (none, not requested) when a test ends, so that the
/// other markdown tests on this thread render plain code.
struct Reset;

impl Drop for Reset {
    fn drop(&mut self) {
        highlight::reset();
    }
}

/// A stand-in for highlight.js: knows `rust` and `python`, wraps the keywords `fn`, `def` and
/// `return` in `hljs-keyword` spans and escapes the rest like highlight.js does. Counts its calls.
fn fake(calls: Rc<Cell<usize>>) -> highlight::Highlighter {
    Rc::new(move |lang: &str, code: &str| {
        calls.set(calls.get() + 1);
        if !matches!(lang, "rust" | "python" | "rs") {
            return None;
        }
        let mut out = String::new();
        for (i, word) in code.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let escaped = word
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#x27;");
            if matches!(word, "fn" | "def" | "return") {
                out.push_str(&format!("<span class=\"hljs-keyword\">{escaped}</span>"));
            } else {
                out.push_str(&escaped);
            }
        }
        Some(out)
    })
}

fn install_fake() -> Rc<Cell<usize>> {
    let calls = Rc::new(Cell::new(0));
    highlight::install(fake(calls.clone()));
    calls
}

#[test]
fn safe_highlight_output_is_recognised() {
    let code = "fn a() -> &'static str { \"<b>\" }";
    let good = "<span class=\"hljs-keyword\">fn</span> <span class=\"hljs-title function_\">a</span>() -&gt; &amp;&#x27;static str { <span class=\"hljs-string\">&quot;&lt;b&gt;&quot;</span> }";
    assert!(is_safe_highlight(code, good));
    assert!(is_safe_highlight(
        "<x>",
        "<span class=\"language-xml\">&lt;x&gt;</span>"
    ));
    assert!(is_safe_highlight("", ""));
    let bad = [
        // Text added or lost.
        "<span class=\"hljs-keyword\">fn</span> b() -&gt; &amp;&#x27;static str { &quot;&lt;b&gt;&quot; }",
        // Markup that is not a highlight span.
        "<script>x</script>",
        "<span class=\"hljs-keyword\" onclick=\"x\">fn</span>",
        "<span class=\"evil\">fn</span>",
        "<span class=\"hljs-x\"><img src=x onerror=alert(1)>",
        "<span class=\"hljs-a&quot;\">fn</span>",
        "<span class='hljs-keyword'>fn</span>",
        // Unbalanced.
        "<span class=\"hljs-keyword\">fn",
        "fn</span>",
        // Raw characters and unknown entities.
        "fn a() -> x",
        "fn&nbsp;a",
    ];
    for html in bad {
        assert!(!is_safe_highlight(code, html), "{html}");
    }
    assert!(!is_safe_highlight("a<b", "a<b"));
    assert!(!is_safe_highlight(
        "fn",
        "<span class=\"hljs-keyword\">fn</span></span>"
    ));
}

#[test]
fn closed_fences_are_told_from_open_ones() {
    assert!(fence_closed("```rust\nfn a() {}\n```"));
    assert!(fence_closed("```rust\nfn a() {}\n```\n"));
    assert!(fence_closed("```\n```"));
    assert!(fence_closed("~~~py\nx\n~~~~  \n"));
    assert!(fence_closed("```rust\nx\n   ```"));
    assert!(fence_closed("```rust\nx\n> ```"), "in a block quote");
    assert!(!fence_closed("```rust"));
    assert!(!fence_closed("```rust\n"));
    assert!(!fence_closed("```"));
    assert!(!fence_closed("```\n"));
    assert!(!fence_closed("```rust\nfn a() {}\n"));
    assert!(
        !fence_closed("```rust\nfn a() {}\n``"),
        "closer still arriving"
    );
    assert!(!fence_closed("````md\n```\n"), "shorter run is content");
    assert!(!fence_closed("```md\n~~~\n"), "other character");
    assert!(
        !fence_closed("```md\n```rust\n"),
        "a line with an info string"
    );
    assert!(!fence_closed("```rust\nx\n>"));
    assert!(!fence_closed("plain"));
}

#[test]
fn the_highlighter_is_requested_by_the_first_fenced_block_with_a_language() {
    let _reset = Reset;
    highlight::reset();
    let requests = Rc::new(Cell::new(0));
    let r = requests.clone();
    highlight::set_requester(move || r.set(r.get() + 1));
    render("# Title\n\ntext with `inline code`\n\n    indented code\n\n```\nno language\n```\n");
    assert_eq!(requests.get(), 0, "no fenced block with a language yet");
    assert!(!highlight::is_requested());
    // Streaming: the fence is still open; the request goes out already.
    let html = render("text\n\n```rust\nfn a() {}\n");
    assert_eq!(requests.get(), 1);
    assert!(!html.contains("hljs"), "nothing to highlight with yet");
    render("```python\nx\n```\n\n```go\ny\n```");
    assert_eq!(requests.get(), 1, "requested once");
}

#[test]
fn closed_blocks_with_a_known_language_are_highlighted() {
    let _reset = Reset;
    let calls = install_fake();
    let html = render("Hi\n\n```rust\nfn main() {}\n```\n\ntext");
    assert!(
        html.contains(
            "<pre><code class=\"lmck-code language-rust\" data-lang=\"rust\"><span class=\"hljs-keyword\">fn</span> main() {}\n</code></pre>"
        ),
        "{html}"
    );
    assert_eq!(calls.get(), 1);
    assert_safe(&html);
    // Open fence (streaming): plain.
    let open = render("```rust\nfn main() {}\n");
    assert!(!open.contains("hljs"), "{open}");
    assert_eq!(
        open,
        render("```text\nfn main() {}\n").replace("text", "rust")
    );
    // Unknown language and no language: plain, escaped.
    let unknown = render("```cobol\nfn <x>\n```");
    assert!(
        !unknown.contains("hljs") && unknown.contains("fn &lt;x&gt;"),
        "{unknown}"
    );
    let none = render("```\nfn x\n```");
    assert!(!none.contains("hljs"));
    // Inside containers too.
    let nested =
        render("- item\n\n  ```python\n  def f(): return 1\n  ```\n\n> ```rust\n> fn q\n> ```\n");
    assert_eq!(nested.matches("hljs-keyword").count(), 3, "{nested}");
    assert_safe(&nested);
}

#[test]
fn unsafe_highlighter_output_falls_back_to_plain_code() {
    let _reset = Reset;
    highlight::install(Rc::new(|_: &str, code: &str| {
        Some(format!("<img src=x onerror=alert(1)>{code}"))
    }));
    let html = render("```rust\nfn <b>\n```");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("fn &lt;b&gt;"), "{html}");
    assert_safe(&html);
}

#[test]
fn streamed_and_highlighted_equals_a_full_render() {
    let _reset = Reset;
    install_fake();
    for text in CORPUS {
        stream_and_check(text, &[1]);
        stream_and_check(text, &[3, 1, 7]);
    }
    let reply = "Sure:\n\n```rust\nfn main() {\n    return;\n}\n```\n\nand\n\n```python\ndef f():\n    return 1\n```\n";
    stream_and_check(reply, &[1]);
    assert!(render(reply).contains("hljs-keyword"));
}

#[test]
fn each_code_block_is_highlighted_once_while_streaming() {
    let _reset = Reset;
    let calls = install_fake();
    let text = long_reply(24 * 1024);
    let blocks = text.matches("```rust\n").count();
    let mut inc = Incremental::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(8) {
        inc.push(&piece.iter().collect::<String>());
    }
    assert!(blocks > 10);
    // All blocks hold the same code: one highlighter run, then the cache.
    assert_eq!(calls.get(), 1, "highlighted {} times", calls.get());
    assert_eq!(highlight::cached(), 1);
    assert_eq!(inc.html().matches("hljs-keyword").count(), blocks);
    assert_eq!(inc.html(), render(&text));
}

#[test]
fn distinct_blocks_are_highlighted_once_each() {
    let _reset = Reset;
    let calls = install_fake();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!(
            "Step {i}:\n\n```rust\nfn step_{i}() {{}}\n```\n\n"
        ));
    }
    let mut inc = Incremental::new();
    for c in text.chars() {
        inc.push(&c.to_string());
    }
    assert_eq!(calls.get(), 20);
    assert_eq!(inc.html().matches("hljs-keyword").count(), 20);
}

#[test]
fn a_highlighter_arriving_late_upgrades_the_finished_blocks() {
    let _reset = Reset;
    highlight::reset();
    let installed = Rc::new(RefCell::new(0));
    let seen = installed.clone();
    highlight::subscribe(move || *seen.borrow_mut() += 1);
    let mut inc = Incremental::new();
    inc.push("Before:\n\n```rust\nfn early() {}\n```\n\nA paragraph.\n\n");
    assert!(inc.finished_blocks() >= 2);
    assert!(!inc.html().contains("hljs"));
    let keys: Vec<u64> = inc.blocks().iter().map(|b| b.key).collect();
    install_fake();
    assert_eq!(*installed.borrow(), 1, "subscribers are told");
    inc.push("More.\n\n");
    assert!(
        inc.html()
            .contains("<span class=\"hljs-keyword\">fn</span> early")
    );
    assert_eq!(inc.html(), render(inc.source()));
    let after: Vec<u64> = inc.blocks().iter().map(|b| b.key).collect();
    assert_eq!(after[..keys.len()], keys[..], "blocks keep their keys");
    inc.push("```python\ndef late(): return 2\n");
    assert!(
        !inc.html().contains("late(): <span"),
        "open fence stays plain"
    );
    inc.push("```\n");
    assert_eq!(inc.html().matches("hljs-keyword").count(), 3);
    assert_eq!(inc.html(), render(inc.source()));
}
