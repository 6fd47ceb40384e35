//! Bare URLs and pathological nesting.

use super::tests::assert_safe;
use super::*;

#[test]
fn bare_urls_become_links() {
    let link = |url: &str| {
        format!(
            "<a href=\"{url}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">{url}</a>"
        )
    };
    assert_eq!(
        render("See https://a.example/x?y=1. And (http://b.example/p_(q)), **https://c.example**!"),
        format!(
            "<p>See {}. And ({}), <strong>{}</strong>!</p>\n",
            link("https://a.example/x?y=1"),
            link("http://b.example/p_(q)"),
            link("https://c.example")
        )
    );
    assert_eq!(
        render("a_b https://x.example/a_b_c_ end"),
        format!("<p>a_b {}_ end</p>\n", link("https://x.example/a_b_c"))
    );
    // Not in code, links, or raw HTML; not after a letter; not without a dotted host.
    for text in [
        "`https://a.example`",
        "```\nhttps://a.example\n```",
        "[https://a.example](javascript:x)",
        "<span title=\"https://a.example\">",
        "xhttps://a.example",
        "https://nohost and https:// and https://.x and https://a.",
        "javascript:alert('https://a.example')",
    ] {
        let html = render(text);
        assert!(!html.contains("<a "), "{text}: {html}");
        assert_safe(&html);
    }
    // Entities and quotes cannot break out of the attribute.
    let html = render("https://a.example/?q=\"><script>&amp;x'");
    assert!(
        html.contains("href=\"https://a.example/?q=%22%3E\""),
        "{html}"
    );
    let html = render("https://a.example/?a=1&amp;b='2'");
    assert!(
        html.contains("href=\"https://a.example/?a=1&amp;b=&#x27;2\""),
        "{html}"
    );
    assert_safe(&html);
    assert!(render("HTTPS://A.EXAMPLE").contains("href=\"HTTPS://A.EXAMPLE\""));
    assert!(render("http://localhost:8080/chat").contains("href=\"http://localhost:8080/chat\""));
}

#[test]
fn deep_nesting_renders_without_overflow() {
    let n = 5000;
    let images = format!("{}x{}", "![".repeat(n), "](javascript:1)".repeat(n));
    let links = format!("{}x{}", "[".repeat(n), "](https://a.example)".repeat(n));
    for text in [
        images,
        links,
        format!("{}x", "> ".repeat(n)),
        format!("{}x", "- ".repeat(n / 5)),
        format!("{}a{}", "*".repeat(n), "*".repeat(n)),
        "<div>".repeat(n),
    ] {
        let html = render(&text);
        assert_safe(&html);
        let mut inc = Incremental::new();
        for chunk in text.as_bytes().chunks(997) {
            inc.push(std::str::from_utf8(chunk).unwrap());
        }
        assert_eq!(inc.html(), html);
    }
}
