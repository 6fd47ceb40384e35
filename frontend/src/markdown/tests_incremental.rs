//! The incremental renderer: for every prefix of a corpus, [`Incremental::html`] equals
//! [`render`] of that prefix, and finished blocks are not re-rendered.

use super::tests::assert_safe;
use super::*;

/// Texts where later text changes earlier blocks (or looks like it could).
pub(super) const CORPUS: &[&str] = &[
    // Tight list made loose by a later item; a list continued after a blank line; a paragraph
    // starting with a digit or a marker character after a list.
    "Intro line\n- one\n- two\n\n- three after blank\n\n2024 was a year\n\n1. a\n2. b\n\n3. c\n\n\
     * star\n\n*emphasis* para\n\n+ plus\n+ more\n\n-not a list\n\n10) ten\n11) eleven\n",
    // Nested lists, continuation paragraphs, code in items, lazy continuation.
    "1. first\n   - nested a\n   - nested b\n\n     para in nested b\n2. second\nlazy line\n\n\
     - x\n\n      indented code in item\n\n  - deeper\n    - deepest\n\nafter\n",
    // Reference-style links: definitions after, before, duplicated, in a list, becoming invalid.
    "See [the docs][d] and [Other] and [missing].\n\n- item with [d]\n\n[d]: https://d.example \"D\"\n\
     [other]: https://o.example\n\nMore [d] and [OTHER][] and ![img][i].\n\n[i]: https://i.example/x.png\n\
     [d]: https://dup.example\n\nlate [late]\n\n[late]: https://l.example 'title' and more text\n\n\
     [late]: https://l2.example\n",
    // Tables: after a paragraph without a blank line, rows, ended by a blank line or a block.
    "Table:\n| a | b |\n|---|:-:|\n| 1 | 2 |\n| `x|y` | ~~z~~ |\nrow without pipes\n\n| h |\n| - |\n\
     > quote after table\n\n|not|a table|\njust text\n",
    // Block quotes: lazy continuation, nested, lists inside, ended.
    "> quoted\nlazy\n> > nested\n> - in quote\n>\n> para\n\nout\n\n>quote\n\n> second quote\n",
    // Fences: closed, tildes, longer closer, unclosed at the end.
    // A diagram: code while its fence is open, the diagram block once it closes.
    "Here:\n\n```mermaid\nflowchart LR\n  A[Start] --> B{Ok?}\n  B -- yes --> C\n```\n\nAnd:\n\n```mermaid\ngraph TD\n",
    "```rust\nfn main() {}\n```\ntext\n~~~\n```\n~~~~\n\n````md\n```\ninner\n```\n````\n\n   ```\n   indented fence\n   ```\n\n\
     ```python\ndef f():\n    return 1\n",
    // Headings: ATX, setext (= and -), not-headings, heading interrupting a paragraph.
    "# H1\npara\n## H2 ##\nSetext\n===\n\nAnother\n---\n\n#hashtag\n\ntext\n# interrupts\n\n\
     - item\n---\n\nfoo\n-\n\nbar\n- baz\n",
    // HTML blocks and inline HTML: comment across blank lines, script, div, inline tags.
    "<div>\n*not md*\n</div>\n\n<!-- comment\n\nstill comment -->\nafter\n\n<script>\nalert(1)\n\n\
     </script>\ntext <b>bold</b> <img src=x onerror=alert(1)>\n\n<p>\npara html\n\nend\n",
    // Indented code across blank lines, thematic breaks vs list items, hard breaks.
    "    code 1\n\n    code 2\n  not code\n\n***\n\n* * *\n\n- - -\n\nline one  \nline two\\\nthree\n\n\
     ___\n\n_em_ __strong__\n",
    // CRLF line endings and tabs.
    "Para\r\n\r\n- a\r\n- b\r\n\r\n\tcode\r\n\r\n> q\r\nlazy\r\n\r\n```\r\nx\r\n",
    // Links and autolinks split by deltas, entities, escapes, unsafe links.
    "[a](https://a.example) <https://b.example> [js](javascript:alert(1)) &amp; \\*lit\\*\n\n\
     [x](<https://c.example/a b>) ![p](data:image/png;base64,AA==)\n\nend",
    // Math: `$`, `$$`, `\(…\)` and `\[…\]` (across lines), prices, code, escapes, unclosed
    // and unparsable formulas.
    "Math: $E = mc^2$ costs $5 and $10.\n\\( a^2 + b^2 \\) and \\(x\\)\n\n\\[\n\\int_0^1 x\\,dx = \
     \\frac{1}{2}\n\\]\n\n$$\\sum_{k=1}^n k$$\n\n`\\(code\\)` and \\\\(not\\\\) and \\( unclosed\n\n\
     bad $\\frac{1}{$ end\n\n- item $x_1$\n",
    // A realistic reply.
    "Sure! Here's how:\n\n## Steps\n\n1. Install:\n   ```bash\n   cargo add serde\n   ```\n2. Use it:\n\n\
     ```rust\n#[derive(Serialize)]\nstruct A { b: u8 }\n```\n\n| Crate | Use |\n|-------|-----|\n| serde | \
     ser |\n\n> **Note:** done.\n\n- [x] one\n- [ ] two\n\nThat's it.",
];

/// Streams `text` in chunks of the sizes `sizes` cycles through (moved to char boundaries),
/// checking after every push that the result equals a full render.
pub(super) fn stream_and_check(text: &str, sizes: &[usize]) {
    let mut inc = Incremental::new();
    let mut at = 0;
    let mut turn = 0;
    while at < text.len() {
        let mut end = (at + sizes[turn % sizes.len()]).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        turn += 1;
        inc.push(&text[at..end]);
        at = end;
        let prefix = &text[..at];
        assert_eq!(inc.source(), prefix);
        let full = render(prefix);
        assert_eq!(inc.html(), full, "prefix {prefix:?}");
        let finished = inc.finished_blocks();
        assert!(finished < inc.blocks().len() || inc.blocks().is_empty());
    }
    assert_safe(&inc.html());
}

#[test]
fn every_prefix_equals_a_full_render() {
    for text in CORPUS {
        stream_and_check(text, &[1]);
    }
}

#[test]
fn any_chunking_equals_a_full_render() {
    for text in CORPUS {
        for sizes in [&[2][..], &[3, 1, 7], &[5, 11, 2, 1], &[64]] {
            stream_and_check(text, sizes);
        }
        // The whole corpus text as one push, and all of them concatenated.
        stream_and_check(text, &[usize::MAX / 2]);
    }
    stream_and_check(&CORPUS.join("\n"), &[1, 4, 9]);
}

#[test]
fn multibyte_text_is_pushed_at_char_boundaries() {
    stream_and_check(
        "Ünïcödé **ß** – [Ꙭ]\n\n| é | 表 |\n|---|---|\n| 😀 | x |\n\n[ꙭ]: https://u.example",
        &[1],
    );
}

/// A long reply without link reference definitions: paragraphs, lists, code, tables.
pub(crate) fn long_reply(target_len: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < target_len {
        text.push_str(match i % 6 {
            0 => {
                "A paragraph with *emphasis*, `code` and a [link](https://example.com/page) that \
                  goes on for a while so that it wraps in the bubble.\n\n"
            }
            1 => "- first item\n- second item with **bold**\n  - nested item\n\n",
            2 => "```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\n",
            3 => "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n",
            4 => "### A heading\n\n> A quote that spans\n> two lines.\n\n",
            _ => "1. one\n2. two\n3. three\n\n",
        });
        i += 1;
    }
    text
}

#[test]
fn finished_blocks_are_rendered_once() {
    let text = long_reply(48 * 1024);
    let mut inc = Incremental::new();
    let mut seen: Vec<Block> = Vec::new();
    for chunk in text.as_bytes().chunks(16) {
        inc.push(std::str::from_utf8(chunk).unwrap());
        let finished = inc.finished_blocks();
        // A finished block never changes again (no reference definitions here).
        for (old, new) in seen.iter().zip(inc.blocks()) {
            assert_eq!(old, new);
        }
        seen = inc.blocks()[..finished].to_vec();
    }
    assert_eq!(inc.html(), render(&text));
    let blocks = inc.blocks().len() as u64;
    assert!(blocks > 500, "{blocks}");
    // Appending to the long reply re-renders only the tail (the last block or two).
    let before = inc.render_count();
    inc.push("One more paragraph");
    assert!(
        inc.render_count() - before <= 2,
        "{}",
        inc.render_count() - before
    );
    let before = inc.render_count();
    inc.push(" that continues.\n\nAnd another.");
    assert!(inc.render_count() - before <= 2);
    // Streaming the whole reply rendered each block a bounded number of times: about one
    // render per push for the open block plus one for each block while the next starts.
    let pushes = text.len().div_ceil(16) as u64;
    assert!(
        inc.render_count() < 2 * pushes + blocks,
        "{}",
        inc.render_count()
    );
    assert_eq!(inc.html(), render(inc.source()));
}

#[test]
fn keys_are_stable_and_revs_track_changes() {
    let mut inc = Incremental::new();
    inc.push("Hello");
    let key = inc.blocks()[0].key;
    let rev = inc.blocks()[0].rev;
    inc.push(" world");
    assert_eq!(inc.blocks()[0].key, key);
    assert_ne!(inc.blocks()[0].rev, rev);
    inc.push("\n\nSecond\n");
    assert_eq!(inc.blocks().len(), 2);
    assert_eq!(inc.blocks()[0].key, key);
    assert_eq!(inc.finished_blocks(), 1);
    let first = inc.blocks()[0].clone();
    inc.push("more");
    assert_eq!(inc.blocks()[0], first);
    assert!(!inc.is_finished());
    inc.finish();
    assert!(inc.is_finished());
    assert_eq!(inc.finished_blocks(), 2);
    inc.push(" text");
    assert!(!inc.is_finished());
    assert_eq!(inc.html(), render("Hello world\n\nSecond\nmore text"));
}

#[test]
fn a_later_definition_re_renders_an_earlier_block() {
    let mut inc = Incremental::new();
    inc.push("Read [the guide].\n\nMore text here.\n\nAnd more.\n\n");
    assert_eq!(inc.finished_blocks(), 2);
    let key = inc.blocks()[0].key;
    assert!(!inc.html().contains("<a "));
    inc.push("[the guide]: https://guide.example");
    assert_eq!(inc.blocks()[0].key, key);
    assert!(
        inc.blocks()[0]
            .html
            .contains("<a href=\"https://guide.example\"")
    );
    // The definition turns into text: the link goes away again.
    inc.push(" not a title");
    assert!(!inc.blocks()[0].html.contains("<a "), "{}", inc.html());
    assert_eq!(inc.html(), render(inc.source()));
}

/// Random texts built from pieces that start, continue or end blocks: streaming each one byte by
/// byte gives a full render at every prefix. `LMCK_MD_FUZZ=<count>` (and `LMCK_MD_SEED`) run more.
#[test]
fn random_texts_equal_a_full_render_at_every_prefix() {
    const PIECES: &[&str] = &[
        "- ",
        "1. ",
        "2. ",
        "3) ",
        "* ",
        "+ ",
        "> ",
        "\n",
        "\n\n",
        "  ",
        "    ",
        "\t",
        "```",
        "~~~",
        "```rust\n",
        "# ",
        "## x",
        "===",
        "---",
        "***",
        "| a | b |",
        "|---|:-:|",
        "[x]",
        "[X]",
        "[x]: /u",
        "[x]: https://x.example",
        "[y]: <https://y.example> \"t\"",
        "[y][x]",
        "![i][y]",
        "[x][]",
        "<div>",
        "</div>",
        "<!--",
        "-->",
        "<b>",
        "text",
        "more words",
        "*em*",
        "**st",
        "`c`",
        "\\",
        "&amp;",
        "[ ] ",
        "[x] ",
        "\r\n",
        "\r",
        "2024",
        "10)",
        "<https://a.example>",
        "[l](javascript:x)",
        "[l](https://l.example)",
        "é",
        "表",
        "<script>",
        "</script>",
        "<pre>",
        " https://u.example/a_b",
        "(http://p.example/(x)).",
        "_",
        "-",
        "1.",
        "|",
        ":",
        "\\|",
        "  \n",
        "> - ",
        "   - ",
    ];
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let count = env("LMCK_MD_FUZZ").unwrap_or(600);
    let mut seed: u64 = env("LMCK_MD_SEED").unwrap_or(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..count {
        let len = 5 + next() % 40;
        let text: String = (0..len)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        let sizes: &[usize] = if i % 2 == 0 { &[1] } else { &[3, 1, 7, 2, 12] };
        stream_and_check(&text, sizes);
    }
}

#[test]
fn an_open_code_block_is_extended_line_by_line() {
    let mut code = String::from("Here it is:\n\n  ~~~~python {.x}\n");
    for i in 0..200 {
        code.push_str(&format!(
            "def f{i}(x):\n\treturn '<{i}>' & x  # ~~~ ```\n  \n"
        ));
    }
    let mut inc = Incremental::new();
    let mut fast = 0;
    for chunk in code.as_bytes().chunks(5) {
        inc.push(std::str::from_utf8(chunk).unwrap());
        fast += usize::from(inc.streams_open_fence());
        assert_eq!(inc.html(), render(inc.source()));
    }
    assert!(fast > code.len() / 5 - 10, "{fast}");
    // Closing fences: too short, with trailing text, then a real one followed by text.
    for delta in ["~~~\n", "~~~~ x\n", "  ~~~~~  ", "\n", "after\n"] {
        inc.push(delta);
        assert_eq!(inc.html(), render(inc.source()));
    }
    assert!(inc.html().ends_with("</code></pre></div>\n<p>after</p>\n"));
    assert!(!inc.streams_open_fence());
}

#[test]
fn a_growing_table_is_extended_row_by_row() {
    let mut table = String::from("Results:\n\n| n | name | note |\n|--:|:-|---|\n");
    for i in 0..150 {
        table.push_str(&format!(
            "| {i} | `x|y` [d] <b> | https://t.example/{i} ~~s~~ |\nrow {i}\n"
        ));
    }
    let mut inc = Incremental::new();
    inc.push("[d]: https://d.example\n\n");
    let mut fast = 0;
    for chunk in table.as_bytes().chunks(5) {
        inc.push(std::str::from_utf8(chunk).unwrap());
        fast += usize::from(inc.streams_open_table());
        assert_eq!(inc.html(), render(inc.source()));
    }
    assert!(fast > table.len() / 5 - 30, "{fast}");
    // Rows that end the table: a blank line, a block start, a partial blank row.
    for delta in [
        "| a |",
        " b\n",
        "> quote\n",
        "| c |\n",
        "  ",
        "\n",
        "after\n",
    ] {
        inc.push(delta);
        assert_eq!(inc.html(), render(inc.source()));
    }
    assert!(!inc.streams_open_table());
}
