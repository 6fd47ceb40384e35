//! Images in model output: remote ones become a click-to-open placeholder naming their host
//! (nothing is fetched while the reply is on screen), `data:` ones of raster types stay inline.

use super::tests::assert_safe;
use super::tests_incremental::stream_and_check;
use super::*;

/// The placeholder markup for a remote image (`title` is the image's, when it has one).
fn placeholder(url: &str, host: &str, alt: &str, title: &str) -> String {
    let title = if title.is_empty() {
        String::new()
    } else {
        format!(" title=\"{title}\"")
    };
    format!(
        "<a class=\"lmck-remote-image\" href=\"{url}\"{title} rel=\"noopener noreferrer nofollow\" \
         target=\"_blank\" referrerpolicy=\"no-referrer\"><span class=\"lmck-remote-image-host\">\
         {host}</span><span class=\"lmck-remote-image-alt\">{alt}</span></a>"
    )
}

#[test]
fn a_remote_image_is_a_placeholder_link_naming_its_host_and_never_an_img() {
    let html = render("![a *b* `c`](https://x.example/i.png \"t\")");
    assert_eq!(
        html,
        format!(
            "<p>{}</p>\n",
            placeholder("https://x.example/i.png", "x.example", "a b c", "t")
        )
    );
    assert_safe(&html);
    let html = render("![x](http://127.0.0.1:8123/p.png?d=secret)");
    assert_eq!(
        html,
        format!(
            "<p>{}</p>\n",
            placeholder("http://127.0.0.1:8123/p.png?d=secret", "127.0.0.1", "x", "")
        )
    );
    assert!(!html.contains("<img"), "{html}");
}

#[test]
fn the_placeholder_names_the_host_the_browser_would_ask() {
    for (url, host) in [
        ("https://trusted.example@evil.example/p.png", "evil.example"),
        ("https://a:b@EVIL.example:8443/p.png", "evil.example"),
        // `\` is sent percent-encoded (`%5C`), so what follows the `@` is the host.
        (
            "https://evil.example\\@trusted.example/p.png",
            "trusted.example",
        ),
        // Non-ASCII is percent-encoded too: shown so, never as a look-alike.
        (
            "https://g\u{43e}\u{43e}gle.example/p.png",
            "g%d0%be%d0%begle.example",
        ),
        ("http:///evil.example/p.png", "evil.example"),
        ("https://evil.example?@trusted.example", "evil.example"),
        ("https://evil.example#@trusted.example", "evil.example"),
    ] {
        assert_eq!(image_host(url).as_deref(), Some(host), "{url}");
        let html = render(&format!("![i](<{url}>)"));
        assert!(
            html.contains(&format!(
                "<span class=\"lmck-remote-image-host\">{host}</span>"
            )),
            "{url}: {html}"
        );
        assert!(!html.contains("<img"), "{url}: {html}");
    }
    assert_eq!(image_host("data:image/png;base64,AA"), None);
    // No host at all: not an image, the alt text stays as text.
    assert_eq!(render("![i](https://@/p.png)"), "<p>i</p>\n");
}

#[test]
fn data_images_of_raster_types_still_render_inline() {
    let html = render("![p](data:image/png;base64,AAA=) ![w](DATA:image/webp,AA)");
    assert_eq!(
        html,
        "<p><img src=\"data:image/png;base64,AAA=\" alt=\"p\" loading=\"lazy\" \
         referrerpolicy=\"no-referrer\" /> <img src=\"DATA:image/webp,AA\" alt=\"w\" \
         loading=\"lazy\" referrerpolicy=\"no-referrer\" /></p>\n"
    );
    assert_safe(&html);
}

#[test]
fn script_and_svg_image_urls_are_still_refused() {
    for markdown in [
        "![i](javascript:alert(1))",
        "![i](data:image/svg+xml;base64,PHN2Zz4=)",
        "![i](data:text/html,x)",
        "![i](//evil.example/p.png)",
    ] {
        let html = render(markdown);
        assert_eq!(html, "<p>i</p>\n", "{markdown}");
    }
}

#[test]
fn a_remote_image_inside_a_link_is_a_span_so_links_do_not_nest() {
    let html = render("[![badge](https://img.example/b.svg)](https://ok.example)");
    assert_eq!(
        html,
        "<p><a href=\"https://ok.example\" rel=\"noopener noreferrer nofollow\" \
         target=\"_blank\"><span class=\"lmck-remote-image\"><span \
         class=\"lmck-remote-image-host\">img.example</span><span \
         class=\"lmck-remote-image-alt\">badge</span></span></a></p>\n"
    );
    assert_safe(&html);
    // Inside a refused link, the image is a placeholder link of its own.
    let html = render("[![y](https://i.example/y.png)](javascript:2)");
    assert_eq!(
        html,
        format!(
            "<p>{}</p>\n",
            placeholder("https://i.example/y.png", "i.example", "y", "")
        )
    );
}

#[test]
fn a_streamed_remote_image_is_never_an_img_at_any_point() {
    let text = "Look: ![x](http://127.0.0.1:8123/p.png?d=secret) and ![p](data:image/png;base64,AA==)\n\n\
                [ref]: https://r.example/i.png\n\n![r][ref] done";
    for sizes in [&[1][..], &[3, 7], &[usize::MAX / 2]] {
        stream_and_check(text, sizes);
    }
    let mut inc = Incremental::new();
    for c in text.chars() {
        inc.push(&c.to_string());
        let html = inc.html();
        assert!(!html.contains("<img src=\"http"), "{html}");
    }
    assert!(inc.html().contains("127.0.0.1</span>"), "{}", inc.html());
    assert!(inc.html().contains("r.example</span>"), "{}", inc.html());
}
