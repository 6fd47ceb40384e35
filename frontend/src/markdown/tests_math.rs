//! Math: the delimiters found, MathML from the converter (checked, without `style`), prices and
//! code left alone, LaTeX that does not parse shown as its source.

use super::math::{self, clean_mathml, delimiters};
use super::tests::assert_safe;
use super::*;

/// The `<math>` elements of `html`.
fn formulas(html: &str) -> usize {
    html.matches("<math").count()
}

#[test]
fn dollar_formulas_render_as_mathml_inline_and_as_a_block() {
    let html = render("Energy: $E = mc^2$.\n\n$$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$$\n");
    assert_safe(&html);
    assert_eq!(formulas(&html), 2, "{html}");
    assert!(
        html.starts_with("<p>Energy: <span class=\"lmck-math\"><math><mi>E</mi><mo>=</mo>"),
        "{html}"
    );
    assert!(html.contains("<msup><mi>c</mi><mn>2</mn></msup>"), "{html}");
    assert!(
        html.contains("<span class=\"lmck-math lmck-math-display\"><math display=\"block\">"),
        "{html}"
    );
    assert!(html.contains("<mfrac>"), "{html}");
    assert!(!html.contains(" style="), "{html}");
}

#[test]
fn backslash_parens_and_brackets_are_formulas_too_even_across_lines_and_with_spaces() {
    let html = render(
        "Inline \\( a^2 + b^2 \\) and \\(x\\).\n\n\\[\n\\int_0^1 x\\,dx = \\frac{1}{2}\n\\]\n",
    );
    assert_safe(&html);
    assert_eq!(formulas(&html), 3, "{html}");
    assert!(html.contains("<math display=\"block\">"), "{html}");
    assert!(!html.contains("\\("), "{html}");
    assert!(!html.contains("\\["), "{html}");
}

#[test]
fn prices_stay_text() {
    for text in [
        "It costs $5 and $10.",
        "Between $5 and $10 a month, or $120/year.",
        "$5.99",
        "Pay $ 5 now and $ 6 later",
    ] {
        let html = render(text);
        assert_eq!(formulas(&html), 0, "{text:?} gave {html}");
        assert!(html.contains('$'), "{text:?} lost its dollars: {html}");
    }
}

#[test]
fn latex_that_does_not_parse_shows_as_its_source_in_code_with_the_message() {
    // (`$\\frac{1}{$` would not be a formula at all: the parser wants balanced braces.)
    let html = render("bad $\\frac{1}$ and $\\notacommand{x}$ end");
    assert_safe(&html);
    assert_eq!(formulas(&html), 0, "{html}");
    assert!(
        html.contains("<code class=\"lmck-math-error\" title=\""),
        "{html}"
    );
    assert!(html.contains(">$\\frac{1}$</code>"), "{html}");
    assert!(html.contains(">$\\notacommand{x}$</code>"), "{html}");
    assert!(html.ends_with(" end</p>\n"), "{html}");
}

#[test]
fn code_escapes_and_unclosed_delimiters_are_not_formulas() {
    let html = render(
        "`\\(code\\)` and \\\\(escaped\\\\) and \\( unclosed\n\nnext paragraph \\)\n\n```\n\\[x\\]\n```\n",
    );
    assert_eq!(formulas(&html), 0, "{html}");
    assert!(html.contains("<code>\\(code\\)</code>"), "{html}");
    assert!(html.contains("\\(escaped\\)"), "{html}");
    assert!(html.contains("and ( unclosed</p>"), "{html}");
    assert!(html.contains("next paragraph )</p>"), "{html}");
    assert!(html.contains("\\[x\\]\n</code>"), "{html}");
}

#[test]
fn rewriting_delimiters_keeps_the_length_and_every_other_byte() {
    for (text, formulas) in [
        ("a \\(x\\) b \\[y\\] c", 2),
        (
            "\\[\n\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}\n\\]",
            1,
        ),
        ("é \\( ü \\) ✓", 1),
        ("`\\(x\\)` \\(y\\)", 1),
    ] {
        let out = delimiters(text).expect("a formula to rewrite");
        assert_eq!(out.len(), text.len(), "{text:?} → {out:?}");
        let changed: Vec<usize> = (0..text.len())
            .filter(|&i| text.as_bytes()[i] != out.as_bytes()[i])
            .collect();
        assert_eq!(changed.len() % 2, 0, "{text:?} → {out:?}");
        assert_eq!(changed.len(), 4 * formulas, "{text:?} → {out:?}");
    }
    assert_eq!(delimiters("no formulas, $5"), None);
    assert_eq!(delimiters("`\\(only code\\)`"), None);
}

#[test]
fn layout_that_math_core_writes_as_style_becomes_classes_and_colours_are_dropped() {
    let html = render(
        "$$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$\n\n$\\color{red}{x} + \\textsc{Ab}$\n\n\
         $$\\begin{array}{|c|c|} \\hline 1 & 2 \\\\ \\hdashline 3 & 4 \\end{array}$$",
    );
    assert_safe(&html);
    assert_eq!(formulas(&html), 3, "{html}");
    assert!(!html.contains(" style="), "{html}");
    assert!(html.contains("lmck-m-"), "{html}");
}

#[test]
fn the_mathml_check_refuses_what_math_core_never_writes() {
    let ok = "<math><mrow class=\"menclose-updiagonalstrike evil\" style=\"color:#ff0000;text-align: left;justify-items: start;\"><mi>x</mi><mo>&lt;</mo><mn>&#x31;</mn></mrow><mspace width=\"1em\"/></math>";
    assert_eq!(
        clean_mathml(ok).as_deref(),
        Some(
            "<math><mrow class=\"menclose-updiagonalstrike lmck-m-left\"><mi>x</mi><mo>&lt;</mo><mn>&#x31;</mn></mrow><mspace width=\"1em\"/></math>"
        )
    );
    // Event handlers and unknown attributes are dropped.
    assert_eq!(
        clean_mathml("<math onclick=\"alert(1)\" href=\"javascript:x\"><mi>x</mi></math>")
            .as_deref(),
        Some("<math><mi>x</mi></math>")
    );
    for bad in [
        "<math><a href=\"https://x.example\">x</a></math>",
        "<math><script>alert(1)</script></math>",
        "<math><mi>x</mi>",
        "<math><mi>x</mo></math>",
        "<math><mi>&</mi></math>",
        "<math><mi>&bogus</mi></math>",
        "<math><mi title=x>x</mi></math>",
        "<mi>x</mi>",
        "<math><mi>x</mi></math><math></math>",
        "<math><mi>x</mi></math> trailing",
        "text <math></math>",
        "<math><mi>\"</mi></math>",
    ] {
        assert_eq!(clean_mathml(bad), None, "{bad}");
    }
}

#[test]
fn a_formula_is_converted_once_while_its_reply_streams() {
    let before = math::clear_cache();
    let mut inc = Incremental::new();
    for piece in ["Area: $\\pi r^2$ and", " more", " text", " and $x$."] {
        inc.push(piece);
    }
    assert_eq!(formulas(&inc.html()), 2);
    assert_eq!(
        math::conversions() - before,
        2,
        "each formula converted once"
    );
    assert_eq!(inc.html(), render(inc.source()));
    assert_eq!(
        math::conversions() - before,
        2,
        "a render of the same text converts nothing"
    );
}
