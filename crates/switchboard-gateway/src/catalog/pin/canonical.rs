//! The JSON Canonicalization Scheme (RFC 8785) and the SHA-256 of a value's
//! canonical form: what a lock records of each definition.
//!
//! Members sorted by their names' UTF-16 code units, no whitespace, strings as
//! ECMAScript's `JSON.stringify` writes them, numbers as ECMAScript writes an
//! IEEE 754 double (`ryu-js`). Pure; no I/O.

use serde_json::Value;

/// The canonical form of `value` (RFC 8785 §3.2).
///
/// Errors: a number that is not finite cannot be written (§3.2.2.3); serde_json
/// never holds one, so the only error is the caller's own construction.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Lowercase hex SHA-256 of [`canonical`]`(value)`.
pub fn sha256_hex(value: &Value) -> String {
    hex(&sha256(canonical(value).as_bytes()))
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    let mut out = [0; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (name, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// RFC 8785 §3.2.2.3: the double's ECMAScript form (integers beyond 2^53 are
/// rounded to the nearest double first, as the RFC requires).
fn write_number(n: &serde_json::Number, out: &mut String) {
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f == 0.0 {
        // -0 is written 0.
        out.push('0');
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format_finite(f));
}

/// RFC 8785 §3.2.2.2: `"` and `\` escaped, U+0000..U+001F as `\b \t \n \f \r`
/// or `\u00xx` (lowercase hex), everything else as itself.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(bits: u64) -> String {
        let v = serde_json::Number::from_f64(f64::from_bits(bits)).unwrap();
        canonical(&Value::Number(v))
    }

    /// RFC 8785 Appendix B: IEEE 754 doubles and their canonical text.
    #[test]
    fn rfc8785_appendix_b_numbers() {
        let vectors: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, text) in vectors {
            assert_eq!(number(*bits), *text, "{bits:#018x}");
        }
    }

    /// RFC 8785 §3.2.3: the sorting example (UTF-16 code units, not UTF-8 or
    /// code points).
    #[test]
    fn rfc8785_sorting_example() {
        let v = json!({
            "\u{20ac}": "Euro Sign",
            "\r": "Carriage Return",
            "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\u{1f600}": "Emoji: Grinning Face",
            "\u{80}": "Control",
            "\u{f6}": "Latin Small Letter O With Diaeresis"
        });
        let values: Vec<String> = {
            let text = canonical(&v);
            let parsed: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
            // preserve_order keeps the canonical text's order.
            parsed
                .values()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            values,
            [
                "Carriage Return",
                "One",
                "Control",
                "Latin Small Letter O With Diaeresis",
                "Euro Sign",
                "Emoji: Grinning Face",
                "Hebrew Letter Dalet With Dagesh",
            ]
        );
    }

    /// RFC 8785 §3.2.2: the example object and its canonical text.
    #[test]
    fn rfc8785_serialization_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let v: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            canonical(&v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    #[test]
    fn integers_and_nesting() {
        let v = json!({"b": [1, -2, {"z": 0, "a": 10000000}], "a": "x"});
        assert_eq!(
            canonical(&v),
            r#"{"a":"x","b":[1,-2,{"a":10000000,"z":0}]}"#
        );
        // The hash is of the canonical text: member order does not change it.
        let w: Value = serde_json::from_str(r#"{"a":"x","b":[1,-2,{"a":1e7,"z":0}]}"#).unwrap();
        assert_eq!(sha256_hex(&v), sha256_hex(&w));
        assert_eq!(
            sha256_hex(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
