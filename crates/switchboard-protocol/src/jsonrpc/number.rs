//! Whole numbers in JSON number literals, read from their digits.
//!
//! JSON Schema (2020-12, "Validation" §6.1.1; also drafts 6 and 7) counts any
//! number with a zero fractional part as an `integer`: `1.0`, `1e3` and
//! `-2.50e1` are integers to it, and so to every `schema.json` field typed
//! `integer` (the request id among them). These functions tell such literals
//! apart and read their value exactly, with no rounding through a double.
//!
//! This module must not know messages or ids; it only reads number literals.

/// The parts of a JSON number literal (RFC 8259 §6:
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`): integer digits, fraction
/// digits, and the exponent (saturated to `i64`). `None` when `text` is not one
/// (no surrounding whitespace allowed).
fn parts(text: &str) -> Option<(&[u8], &[u8], i64)> {
    let b = text.strip_prefix('-').unwrap_or(text).as_bytes();
    let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let (int, mut rest) = b.split_at(int_len);
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let mut frac: &[u8] = &[];
    if let [b'.', after @ ..] = rest {
        let n = after.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        (frac, rest) = after.split_at(n);
    }
    let mut exp: i64 = 0;
    if let [b'e' | b'E', after @ ..] = rest {
        let (negative, digits) = match after {
            [b'-', d @ ..] => (true, d),
            [b'+', d @ ..] => (false, d),
            d => (false, d),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        for d in digits {
            exp = exp.saturating_mul(10).saturating_add(i64::from(d - b'0'));
        }
        if negative {
            exp = -exp;
        }
        rest = &[];
    }
    rest.is_empty().then_some((int, frac, exp))
}

/// Whether `text` is a JSON number literal whose value is a whole number:
/// `7`, `-0`, `1.0`, `1e3`, `10e-1`, `1e400` are; `1.5`, `1e-1`, `01`, `+1`,
/// ` 1` are not.
pub fn is_whole(text: &str) -> bool {
    let Some((int, frac, exp)) = parts(text) else {
        return false;
    };
    let digits = || int.iter().chain(frac);
    if digits().all(|&d| d == b'0') {
        return true;
    }
    // value = (int ++ frac) × 10^(exp − frac.len()): whole when the last
    // `frac.len() − exp` digits (if that is positive) are zeros.
    let shift = i64::try_from(frac.len())
        .unwrap_or(i64::MAX)
        .saturating_sub(exp);
    let trailing_zeros = digits().rev().take_while(|&&d| d == b'0').count();
    shift <= 0 || i64::try_from(trailing_zeros).is_ok_and(|z| z >= shift)
}

/// The value of a whole-number literal (see [`is_whole`]) when it fits an
/// `i128` (so every `i64` and `u64`): `1e3` gives 1000, `-2.50e1` gives -25,
/// `-0.0` and `0e999` give 0. `None` for a literal that is not a whole number
/// or lies beyond `i128`.
pub fn whole_value(text: &str) -> Option<i128> {
    // The canonical text is plain digits for every value of at most 64 digits,
    // which covers `i128`; a longer one (with an exponent) does not parse.
    canonical(text)?.parse().ok()
}

/// The canonical text of a whole-number literal's value (see [`is_whole`]),
/// the same for every way of writing one number: its plain digits (`1e3`,
/// `1000.0` and `1000` give `1000`; `-0` and `0.0e5` give `0`) when they are at
/// most 64, else its significant digits and an exponent (`1e400` and
/// `10e399` give `1e400`), so that no literal makes a long text. `None` when
/// `text` is not a whole-number literal.
pub fn canonical(text: &str) -> Option<String> {
    if !is_whole(text) {
        return None;
    }
    let (int, frac, exp) = parts(text)?;
    let digits: Vec<u8> = int.iter().chain(frac).copied().collect();
    let start = digits.iter().position(|&d| d != b'0');
    let Some(start) = start else {
        return Some("0".to_owned());
    };
    let end = digits
        .iter()
        .rposition(|&d| d != b'0')
        .map_or(start, |i| i + 1);
    let significant = &digits[start..end];
    // value = significant × 10^zeros, zeros ≥ 0 as the value is whole.
    let trailing = i64::try_from(digits.len() - end).unwrap_or(i64::MAX);
    let zeros = exp
        .saturating_sub(i64::try_from(frac.len()).unwrap_or(i64::MAX))
        .saturating_add(trailing);
    let mut out = String::new();
    if text.starts_with('-') {
        out.push('-');
    }
    out.extend(significant.iter().map(|&d| char::from(d)));
    let total = i64::try_from(significant.len())
        .unwrap_or(i64::MAX)
        .saturating_add(zeros);
    if total <= 64 {
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(zeros).unwrap_or(0),
        ));
    } else {
        out.push('e');
        out.push_str(&zeros.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_told_from_others() {
        for text in [
            "0",
            "-0",
            "7",
            "1.0",
            "1e3",
            "1E+3",
            "-2.50e1",
            "10e-1",
            "0.0",
            "0e-5",
            "1e400",
            "123456789012345678901234567890",
        ] {
            assert!(is_whole(text), "{text} is whole");
        }
        for text in [
            "", "-", "01", "+1", " 1", "1 ", "1.", ".5", "1e", "1e+", "--1", "1.5", "1e-1",
            "0.01e1", "2.5e0", "1x", "1e-400", "0x10", "NaN",
        ] {
            assert!(!is_whole(text), "{text:?} is not whole");
        }
    }

    #[test]
    fn one_number_has_one_canonical_text() {
        for (texts, canonical_text) in [
            (
                &["1000", "1e3", "1E+3", "1000.0", "10e2", "0.1e4"][..],
                "1000",
            ),
            (&["0", "-0", "0.0", "-0.0e-7", "0e999"], "0"),
            (&["-25", "-2.50e1", "-250e-1"], "-25"),
            (&["1e400", "10e399", "1.0e400"], "1e400"),
        ] {
            for text in texts {
                assert_eq!(canonical(text).as_deref(), Some(canonical_text), "{text}");
            }
        }
        let long = "1".repeat(70);
        assert_eq!(canonical(&long), Some(format!("{long}e0")));
        assert_eq!(canonical(&"9".repeat(64)), Some("9".repeat(64)));
        assert_eq!(canonical("1.5"), None);
    }

    #[test]
    fn values_are_read_from_the_digits() {
        for (text, value) in [
            ("7", Some(7)),
            ("-0", Some(0)),
            ("1.0", Some(1)),
            ("1e3", Some(1000)),
            ("-2.50e1", Some(-25)),
            ("10e-1", Some(1)),
            ("-0.0e-7", Some(0)),
            ("0e999", Some(0)),
            ("9.223372036854775807e18", Some(i128::from(i64::MAX))),
            ("18446744073709551615.000", Some(i128::from(u64::MAX))),
            // 2^53 + 1: a double would round it.
            ("9.007199254740993e15", Some(9_007_199_254_740_993)),
            ("1e38", Some(10_i128.pow(38))),
            ("1e39", None),
            ("1e400", None),
            ("1.5", None),
        ] {
            assert_eq!(whole_value(text), value, "{text}");
        }
    }
}
