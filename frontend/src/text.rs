//! Case folding and number parsing done by the browser in the wasm build, so that core's
//! Unicode lower-case table and its float parser stay out of the first load.
//!
//! Decision, measured on the main wasm module as sent (2026-12-07, names kept through
//! `wasm-opt -Oz`, each crate's function bodies and tables gzipped): `str::to_lowercase` (3,165 B
//! of code, an 11,696 B table, 4.3 KB gzip with it) was reached only from the list filters and
//! the slash commands, and `<f64 as FromStr>` (3,775 B of code and its two tables, 10.8 KB
//! gzip) only from the parameter fields. The browser has both: `String.prototype.toLowerCase`
//! applies the same Unicode default case mapping (final sigma included) and `parseFloat`, given
//! only text this module has checked to be a decimal number, reads it as Rust would (correctly
//! rounded). Native builds (the unit tests) use Rust's own. ASCII text, nearly every name and
//! query, is lower-cased in Rust without a crossing and without the table.

/// `s` in lower case (Unicode default case mapping).
pub fn lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    #[cfg(target_arch = "wasm32")]
    {
        String::from(js_sys::JsString::from(s).to_lower_case())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        s.to_lowercase()
    }
}

/// `s` as a decimal number: an optional sign, digits with an optional fraction (`1`, `1.5`,
/// `.5`, `5.`) and an optional exponent (`1e-3`); anything else (`inf`, `NaN`, `0x10`, a space,
/// an empty string) is `None`, as are numbers too large for an `f64`.
pub fn parse_decimal(s: &str) -> Option<f64> {
    if !is_decimal(s) {
        return None;
    }
    #[cfg(target_arch = "wasm32")]
    let v = js_sys::parse_float(s);
    #[cfg(not(target_arch = "wasm32"))]
    let v = s.parse::<f64>().ok()?;
    v.is_finite().then_some(v)
}

/// Whether `s` is `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`.
fn is_decimal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_in_every_written_form_are_read_and_anything_else_is_not() {
        for (text, want) in [
            ("0.2", 0.2),
            ("-1.5", -1.5),
            ("+3", 3.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e-3", 0.001),
            ("2.5E+2", 250.0),
        ] {
            assert_eq!(parse_decimal(text), Some(want), "{text}");
        }
        for text in [
            "", "+", ".", "e5", "1e", "1e+", "1.2.3", "inf", "NaN", "0x10", " 1", "1 ", "1_0",
            "1e999",
        ] {
            assert_eq!(parse_decimal(text), None, "{text:?}");
        }
    }

    #[test]
    fn lower_case_folds_ascii_and_the_rest_of_unicode() {
        assert_eq!(lower("Hello World"), "hello world");
        assert_eq!(lower("ÄÖÜ Straße"), "äöü straße");
        assert_eq!(lower("ΟΔΟΣ"), "οδος");
    }
}
