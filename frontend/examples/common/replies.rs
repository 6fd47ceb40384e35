//! The replies the markdown benchmarks stream (shared by the native and the wasm benchmark).

/// A reply mixing what models write: paragraphs, lists, code, tables, quotes, headings.
pub fn mixed_reply(target: usize) -> String {
    const PARTS: &[&str] = &[
        "Here is a paragraph with *emphasis*, **bold**, `inline code` and a \
         [link](https://example.com/docs/page). It runs long enough to wrap a few times in the \
         chat bubble, like most paragraphs a model writes.\n\n",
        "1. First step, with a short explanation.\n2. Second step with `cargo build`.\n   - a \
         nested detail\n   - another one\n3. Third step.\n\n",
        "```rust\nfn main() {\n    let v: Vec<u32> = (0..10).collect();\n    \
         println!(\"{v:?}\");\n}\n```\n\n",
        "| Option | Default | Meaning |\n|---|---|---|\n| `a` | 1 | the first |\n| `b` | 2 | \
         the second |\n\n",
        "### A heading\n\n> A quoted note that\n> spans two lines.\n\n",
        "- [x] done item\n- [ ] open item\n\n",
    ];
    let mut text = String::new();
    for part in PARTS.iter().cycle() {
        if text.len() >= target {
            break;
        }
        text.push_str(part);
    }
    text
}

/// A reply that is one long fenced code block (the worst case: its tail never finishes).
pub fn code_reply(target: usize) -> String {
    let mut text = String::from("```python\n");
    let mut i = 0;
    while text.len() < target {
        text.push_str(&format!(
            "def f{i}(x):\n    return x * {i}  # <comment>\n\n"
        ));
        i += 1;
    }
    text
}

/// A reply that is one long table (its tail never finishes until a blank line).
pub fn table_reply(target: usize) -> String {
    let mut text = String::from("| # | name | value | note |\n|---|---|---|---|\n");
    let mut i = 0;
    while text.len() < target {
        text.push_str(&format!("| {i} | item `{i}` | {} | *some* note |\n", i * 7));
        i += 1;
    }
    text
}

/// A reply that is one long tight list (a later blank line could still make it loose).
pub fn list_reply(target: usize) -> String {
    let mut text = String::new();
    let mut i = 1;
    while text.len() < target {
        text.push_str(&format!(
            "{i}. Step {i}: run `cmd --flag {i}` and check the **output**.\n"
        ));
        i += 1;
    }
    text
}
