//! Rendering and sanitising tests.

use super::*;

/// Checks that `html` only holds markup the renderer itself builds: known tags and attributes,
/// every attribute double-quoted, and URLs that passed the filters.
pub(super) fn assert_safe(html: &str) {
    const TAGS: &[&str] = &[
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "em",
        "strong",
        "del",
        "a",
        "img",
        "ul",
        "ol",
        "li",
        "blockquote",
        "pre",
        "code",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "div",
        "button",
        "input",
        "hr",
        "br",
        "span",
    ];
    const ATTRS: &[&str] = &[
        "href",
        "src",
        "alt",
        "title",
        "rel",
        "target",
        "loading",
        "referrerpolicy",
        "class",
        "type",
        "aria-label",
        "aria-pressed",
        "data-lang",
        "disabled",
        "checked",
        "start",
    ];
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let rest_tag = rest.strip_prefix('/').unwrap_or(rest);
        let name_len = rest_tag
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest_tag.len());
        let name = &rest_tag[..name_len];
        assert!(
            TAGS.contains(&name) || math::TAGS.contains(&name),
            "tag <{name}> in {html}"
        );
        let mut attrs = &rest_tag[name_len..];
        loop {
            attrs = attrs.trim_start();
            if let Some(after) = attrs.strip_prefix("/>").or_else(|| attrs.strip_prefix('>')) {
                rest = after;
                break;
            }
            let eq = attrs
                .find("=\"")
                .unwrap_or_else(|| panic!("bad tag in {html}"));
            let attr = &attrs[..eq];
            assert!(
                ATTRS.contains(&attr) || math::ATTRS.contains(&attr),
                "attribute {attr} in {html}"
            );
            let value_end = attrs[eq + 2..].find('"').expect("unterminated value") + eq + 2;
            let value = &attrs[eq + 2..value_end];
            assert!(
                !value.contains(['<', '>']),
                "raw <> in attribute value: {html}"
            );
            match attr {
                "href" => assert!(
                    ["http://", "https://", "mailto:"]
                        .iter()
                        .any(|p| value.starts_with(p)),
                    "href {value}"
                ),
                // Only `data:` images load inline; remote ones are placeholder links.
                "src" => assert!(
                    [
                        "data:image/png",
                        "data:image/jpeg",
                        "data:image/gif",
                        "data:image/webp",
                        "data:image/jpg"
                    ]
                    .iter()
                    .any(|p| value.to_ascii_lowercase().starts_with(p)),
                    "src {value}"
                ),
                _ => {}
            }
            attrs = &attrs[value_end + 1..];
        }
    }
}

fn no_link(markdown: &str) {
    let html = render(markdown);
    assert!(!html.contains("<a "), "{markdown:?} gave a link: {html}");
    assert!(!html.contains("<img"), "{markdown:?} gave an image: {html}");
    assert_safe(&html);
}

#[test]
fn raw_html_is_escaped_inline_and_in_blocks() {
    let html = render("hi <script>alert(1)</script> <b onclick=x>b</b>");
    assert_eq!(
        html,
        "<p>hi &lt;script&gt;alert(1)&lt;/script&gt; &lt;b onclick=x&gt;b&lt;/b&gt;</p>\n"
    );
    let html = render("<script>\nalert(1)\n</script>\n\n<div onmouseover=\"x\">\n\n*md*\n\n</div>");
    assert!(html.starts_with("<pre class=\"lmck-raw-html\">&lt;script&gt;\nalert(1)\n"));
    assert!(html.contains("<p><em>md</em></p>"));
    assert!(!html.to_ascii_lowercase().contains("<script"));
    assert!(!html.contains("<div onmouseover"));
    assert_safe(&html);
    for payload in [
        "<img src=x onerror=alert(1)>",
        "<IMG SRC=x ONERROR=alert(1)>",
        "text <img src=x onerror=alert(1)> text",
        "<svg/onload=alert(1)>",
        "<iframe src=\"javascript:alert(1)\"></iframe>",
        "<!-- <img src=x onerror=alert(1)> -->",
        "<style>*{x:y}</style>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "- <img src=x onerror=alert(1)>\n\n> <script>x</script>",
        "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    ] {
        let html = render(payload);
        assert!(
            !html.to_ascii_lowercase().contains("<img"),
            "{payload}: {html}"
        );
        no_link(payload);
    }
}

#[test]
fn script_links_are_plain_text() {
    for markdown in [
        "[a](javascript:alert(1))",
        "[a](JaVaScRiPt:alert(1))",
        "[a]( javascript:alert(1) )",
        "[a](<javascript:alert(1)>)",
        "[a](<java\tscript:alert(1)>)",
        "[a](&#106;avascript:alert(1))",
        "[a](&#x6A;&#x61;vascript:alert(1))",
        "[a](java&#9;script:alert(1))",
        "[a](java&#10;script:alert(1))",
        "[a](&#1;javascript:alert(1))",
        "[a](&#0;javascript:alert(1))",
        "[a](%20javascript:alert(1))",
        "[a](javascript&colon;alert(1))",
        "[a](vbscript:msgbox(1))",
        "[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[a](file:///etc/passwd)",
        "[a](//evil.example/x)",
        "[a](/chat/api/conversations)",
        "[a](#top)",
        "[a](http:)",
        "[a][r]\n\n[r]: javascript:alert(1)",
        "<javascript:alert(1)>",
        "<JAVASCRIPT:alert(1)>",
        "<data:text/html,x>",
        "![i](javascript:alert(1))",
        "![i](data:image/svg+xml;base64,PHN2Zz4=)",
        "![i](data:text/html,<script>x</script>)",
        "![i](/relative.png)",
        "[![i](javascript:x)](javascript:y)",
    ] {
        no_link(markdown);
    }
    assert_eq!(render("[a](javascript:alert(1))"), "<p>a</p>\n");
    assert_eq!(
        render("<javascript:alert(1)>"),
        "<p>javascript:alert(1)</p>\n"
    );
}

#[test]
fn allowed_links_and_images() {
    let html =
        render("[a](https://x.example/?q=1&r=\"2\" 'T\"t') <http://y.example> <me@x.example>");
    assert_eq!(
        html,
        "<p><a href=\"https://x.example/?q=1&amp;r=%222%22\" title=\"T&quot;t\" \
         rel=\"noopener noreferrer nofollow\" target=\"_blank\">a</a> \
         <a href=\"http://y.example\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">\
         http://y.example</a> <a href=\"mailto:me@x.example\" rel=\"noopener noreferrer nofollow\" \
         target=\"_blank\">me@x.example</a></p>\n"
    );
    assert_safe(&html);
    assert!(render("[m](MAILTO:a@b.example)").contains("href=\"MAILTO:a@b.example\""));
    // Images: see tests_images. A refused image inside an accepted link, and the reverse.
    let html = render(
        "[![x](javascript:1)](https://ok.example) [![y](https://i.example/y.png)](javascript:2)",
    );
    assert!(html.contains("<a href=\"https://ok.example\""), "{html}");
    assert!(html.contains(">x</a>"), "{html}");
    assert!(
        html.contains("<a class=\"lmck-remote-image\" href=\"https://i.example/y.png\""),
        "{html}"
    );
    assert_safe(&html);
}

#[test]
fn url_filters() {
    assert_eq!(
        link_url(" \u{1}https://a.example\t/b\n"),
        Some("https://a.example/b".into())
    );
    assert_eq!(link_url("java\nscript:alert(1)"), None);
    assert_eq!(link_url("https://"), None);
    assert_eq!(
        link_url("mailto:x@y.example").as_deref(),
        Some("mailto:x@y.example")
    );
    assert!(image_url("DATA:image/JPEG;base64,AA").is_some());
    assert!(image_url("data:image/pngx,AA").is_none());
    assert!(image_url("data:image/webp,AA").is_some());
    assert!(image_url("mailto:x@y.example").is_none());
}

#[test]
fn gfm_tables_strikethrough_task_lists() {
    let html = render("| a | b |\n|:--|--:|\n| `c\\|d` | ~~e~~ |\n\n~one~ ~~two~~");
    assert_eq!(
        html,
        "<div class=\"lmck-table\"><table><thead><tr><th class=\"lmck-align-left\">a</th>\
         <th class=\"lmck-align-right\">b</th></tr></thead><tbody>\n<tr>\
         <td class=\"lmck-align-left\"><code>c|d</code></td>\
         <td class=\"lmck-align-right\"><del>e</del></td></tr>\n</tbody></table>\n</div>\n\
         <p><del>one</del> <del>two</del></p>\n"
    );
    assert_safe(&html);
    let html = render("- [ ] todo\n- [x] done\n- [X] also");
    assert_eq!(
        html,
        "<ul>\n<li><input disabled=\"\" type=\"checkbox\" aria-label=\"To do\"/>\ntodo</li>\n\
         <li><input disabled=\"\" type=\"checkbox\" checked=\"\" aria-label=\"Done\"/>\ndone</li>\n\
         <li><input disabled=\"\" type=\"checkbox\" checked=\"\" aria-label=\"Done\"/>\nalso</li>\n</ul>\n"
    );
    assert_safe(&html);
}

#[test]
fn a_closed_mermaid_block_is_a_diagram_block_that_keeps_its_escaped_code() {
    let html = render("```mermaid\nflowchart LR\n  A[\"<b>x</b>\"] --> B\n```\n");
    assert_eq!(
        html,
        "<div class=\"lmck-codeblock lmck-diagram\"><button class=\"lmck-copy\" type=\"button\" \
         aria-label=\"Copy code\">Copy</button><button class=\"lmck-diagram-toggle\" type=\"button\" \
         aria-pressed=\"false\">Source</button><pre><code class=\"lmck-code language-mermaid\" \
         data-lang=\"mermaid\">flowchart LR\n  A[\"&lt;b&gt;x&lt;/b&gt;\"] --&gt; B\n</code></pre></div>\n"
    );
    assert_safe(&html);
    // The info string's other words and its case do not matter.
    assert!(render("```Mermaid title\ngraph TD\n```").contains("lmck-diagram\""));
}

#[test]
fn an_open_mermaid_fence_is_plain_code_until_it_closes() {
    let open = render("```mermaid\nflowchart LR\n  A --> B\n");
    assert!(!open.contains("lmck-diagram"), "{open}");
    assert!(open.contains("language-mermaid"), "{open}");
    // A diagram never asks for the code highlighter (its state is per thread: this test's).
    render("```mermaid\ngraph TD\n```\n\n```mermaid\ngraph TD\n");
    assert!(!highlight::is_requested());
    // Another language is never a diagram, and asks for it.
    assert!(!render("```js\nx\n```").contains("lmck-diagram"));
    assert!(highlight::is_requested());
}

#[test]
fn code_blocks_carry_language_and_copy_button() {
    let html = render("```rust\nfn main() { \"<&>\" }\n```");
    assert_eq!(
        html,
        "<div class=\"lmck-codeblock\"><button class=\"lmck-copy\" type=\"button\" \
         aria-label=\"Copy code\">Copy</button><pre><code class=\"lmck-code language-rust\" \
         data-lang=\"rust\">fn main() { \"&lt;&amp;&gt;\" }\n</code></pre></div>\n"
    );
    assert!(render("    indented\n").contains("<code class=\"lmck-code\">indented\n</code>"));
    assert!(render("```\nx\n```").contains("<code class=\"lmck-code\">x\n</code>"));
    for (info, lang) in [
        ("Python", "python"),
        ("rust,ignore", "rust"),
        ("{.python .numberLines}", "python"),
        ("c++", "cpp"),
        ("C#", "csharp"),
        ("objective-c", "objective-c"),
        ("\"><script>alert(1)</script>", "scriptalert1script"),
    ] {
        assert_eq!(sanitize::language(info), lang, "{info}");
        let html = render(&format!("```{info}\nx\n```"));
        assert!(html.contains(&format!("language-{lang}\"")), "{html}");
        assert_safe(&html);
    }
    // The parser decodes entities in the info string first.
    assert!(render("```a&quot;b\nx\n```").contains("language-ab\""));
}

#[test]
fn unclosed_fence_renders_as_code() {
    let html = render("Here:\n\n```python\ndef f():\n    return '<b>'");
    assert!(html.ends_with(
        "<code class=\"lmck-code language-python\" data-lang=\"python\">def f():\n    \
         return '&lt;b&gt;'</code></pre></div>\n"
    ));
    assert!(render("~~~\n```\nstill code").contains("<code class=\"lmck-code\">```\nstill code"));
}

#[test]
fn commonmark_basics() {
    assert_eq!(
        render("# T\n\nA *b* **c** `d`  \ne\n\n> q\n\n1. x\n2. y\n\n---"),
        "<h1>T</h1>\n<p>A <em>b</em> <strong>c</strong> <code>d</code><br />\ne</p>\n\
         <blockquote>\n<p>q</p>\n</blockquote>\n<ol>\n<li>x</li>\n<li>y</li>\n</ol>\n<hr />\n"
    );
    assert_eq!(
        render("3. c\n4. d"),
        "<ol start=\"3\">\n<li>c</li>\n<li>d</li>\n</ol>\n"
    );
    // Footnotes stay text (math is `tests_math`'s).
    assert_eq!(render("a[^1] $5"), "<p>a[^1] $5</p>\n");
    assert_eq!(render(""), "");
    assert_eq!(
        escape("<a href=\"x\">'&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
}

#[test]
fn reference_links_resolve_case_insensitively() {
    let html = render(
        "[Foo] and [bar][FOO] and ![i][IMG]\n\n[foo]: https://f.example \"T\"\n[img]: https://i.example/i.png\n[foo]: https://second.example",
    );
    assert!(
        html.contains("<a href=\"https://f.example\" title=\"T\""),
        "{html}"
    );
    assert!(!html.contains("second"), "{html}");
    assert!(
        html.contains("<a class=\"lmck-remote-image\" href=\"https://i.example/i.png\""),
        "{html}"
    );
    assert_safe(&html);
}

#[test]
fn link_labels_are_keyed_case_folded_so_any_case_finds_the_definition() {
    assert_eq!(fold_label("FOO Bar"), fold_label("foo bar"));
    assert_eq!(fold_label("Ꙭ"), fold_label("ꙭ"));
    // Full Unicode folding, not lowercasing: the capital sharp s folds to "ss".
    assert_eq!(fold_label("STRASSE"), fold_label("straẞe"));
    assert_ne!(fold_label("foo"), fold_label("fo"));
    let parsed = parse("[Straße]: https://s.example\n", &Defs::new());
    let (label, _, url, _) = &parsed.defs[0];
    assert_eq!(
        (label.as_str(), url.as_str()),
        ("strasse", "https://s.example")
    );
}
