//! A validating JSON scanner that finds the members of the envelope object and the
//! extent of each value without building anything.
//!
//! Classification must not cost a tree: a bridge reads `id` and `method` of a
//! multi-megabyte tool result and forwards the rest. This scanner checks the whole
//! input against the JSON grammar (RFC 8259) — so what it hands out as raw JSON is
//! well-formed — while skipping the insides of strings eight bytes at a time.
//! UTF-8 is checked once for the whole input by `std::str::from_utf8`.
//!
//! It knows the JSON grammar only; the envelope rules are in `message.rs`.

use std::ops::Range;

/// Nesting deeper than this is refused (serde_json's default limit, so that every
/// value we accept can later be decoded by serde_json).
pub(crate) const MAX_DEPTH: usize = 128;

/// Where and why the input is not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) offset: usize,
    pub(crate) what: &'static str,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

/// A member of the top-level object: the key's raw text (inside the quotes, escapes
/// not resolved) and the value's byte range.
pub(crate) struct Member<'a> {
    pub(crate) key: &'a str,
    pub(crate) key_has_escape: bool,
    pub(crate) value: Range<usize>,
}

/// What the top level of the input is.
pub(crate) enum TopLevel<'a> {
    /// An object, with its members in order.
    Object(Vec<Member<'a>>),
    /// An array, with the byte range of each item.
    Array(Vec<Range<usize>>),
    /// Any other well-formed value (string, number, literal).
    Other,
}

fn err<T>(offset: usize, what: &'static str) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, what })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `x` that is zero.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// High bit set in each byte of `w` that needs attention inside a string: `"`, `\`
/// or a control character below 0x20. Bytes >= 0x80 never match.
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
    let quote = zero_bytes(w ^ (LO * b'"' as u64));
    let backslash = zero_bytes(w ^ (LO * b'\\' as u64));
    // A byte below 0x20 with its high bit clear: (b - 0x20) borrows into bit 7.
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    quote | backslash | control
}

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// At an opening quote; leaves `i` after the closing quote. Returns whether the
    /// string had an escape.
    fn string(&mut self) -> Result<bool, SyntaxError> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.i += 1;
        let mut escaped = false;
        loop {
            // Fast path: eight bytes at a time while none is special.
            while self.i + 8 <= self.b.len() {
                let chunk: [u8; 8] = self.b[self.i..self.i + 8].try_into().expect("8 bytes");
                let m = special_bytes(u64::from_le_bytes(chunk));
                if m == 0 {
                    self.i += 8;
                } else {
                    self.i += (m.trailing_zeros() / 8) as usize;
                    break;
                }
            }
            match self.peek() {
                None => return err(self.i, "unterminated string"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    match self.b.get(self.i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
                        Some(b'u') => {
                            let hex = self.b.get(self.i + 2..self.i + 6);
                            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                                return err(self.i, "invalid \\u escape");
                            }
                            self.i += 6;
                        }
                        _ => return err(self.i, "invalid escape"),
                    }
                }
                Some(c) if c < 0x20 => return err(self.i, "control character in string"),
                Some(_) => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), SyntaxError> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return err(self.i, "invalid number"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return err(self.i, "invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return err(self.i, "invalid number");
            }
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), SyntaxError> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            err(self.i, "invalid literal")
        }
    }

    /// Skips one value starting at `i` (no leading whitespace).
    fn value(&mut self, depth: usize) -> Result<(), SyntaxError> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{') => self.object(depth + 1, |_, _, _| Ok(())),
            Some(b'[') => self.array(depth + 1),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => err(self.i, "expected a value"),
            None => err(self.i, "unexpected end of input"),
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.array_items(depth, |_| ())
    }

    /// At `[`; calls `item(range)` for each item.
    fn array_items(
        &mut self,
        depth: usize,
        mut item: impl FnMut(Range<usize>),
    ) -> Result<(), SyntaxError> {
        if depth > MAX_DEPTH {
            return err(self.i, "nesting too deep");
        }
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            let start = self.i;
            self.value(depth)?;
            item(start..self.i);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return err(self.i, "expected ',' or ']'"),
            }
        }
    }

    /// At `{`; calls `member(key, key_has_escape, value_range)` for each member.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(Range<usize>, bool, Range<usize>) -> Result<(), SyntaxError>,
    ) -> Result<(), SyntaxError> {
        if depth > MAX_DEPTH {
            return err(self.i, "nesting too deep");
        }
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return err(self.i, "expected a string key");
            }
            let key_start = self.i + 1;
            let escaped = self.string()?;
            let key = key_start..self.i - 1;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return err(self.i, "expected ':'");
            }
            self.i += 1;
            self.skip_ws();
            let value_start = self.i;
            self.value(depth)?;
            member(key, escaped, value_start..self.i)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return err(self.i, "expected ',' or '}'"),
            }
        }
    }
}

/// Scans a whole JSON text: checks UTF-8 and grammar, and when the top level is an
/// object, returns its members. Leading and trailing whitespace are allowed.
pub(crate) fn scan_top(b: &[u8]) -> Result<(&str, TopLevel<'_>), SyntaxError> {
    let text = match std::str::from_utf8(b) {
        Ok(t) => t,
        Err(e) => return err(e.valid_up_to(), "invalid UTF-8"),
    };
    let mut s = Scanner { b, i: 0 };
    s.skip_ws();
    let top = if s.peek() == Some(b'{') {
        let mut members = Vec::with_capacity(4);
        s.object(1, |key, key_has_escape, value| {
            members.push(Member {
                key: &text[key],
                key_has_escape,
                value,
            });
            Ok(())
        })?;
        TopLevel::Object(members)
    } else if s.peek() == Some(b'[') {
        let mut items = Vec::new();
        s.array_items(1, |r| items.push(r))?;
        TopLevel::Array(items)
    } else {
        s.value(0)?;
        TopLevel::Other
    };
    s.skip_ws();
    if s.i != b.len() {
        return err(s.i, "trailing characters");
    }
    Ok((text, top))
}

/// Calls `member` with each member of the object that `text` holds (already
/// UTF-8, e.g. a `RawValue`'s text): the key's raw text (inside the quotes,
/// escapes not resolved), whether it has an escape, and the value's text.
/// Nothing is built. Errors: `text` is not exactly one JSON object (surrounding
/// whitespace allowed).
pub(crate) fn object_members<'a>(
    text: &'a str,
    mut member: impl FnMut(&'a str, bool, &'a str),
) -> Result<(), SyntaxError> {
    let b = text.as_bytes();
    let mut s = Scanner { b, i: 0 };
    s.skip_ws();
    if s.peek() != Some(b'{') {
        return err(s.i, "expected an object");
    }
    s.object(1, |key, key_has_escape, value| {
        member(&text[key], key_has_escape, &text[value]);
        Ok(())
    })?;
    s.skip_ws();
    if s.i != b.len() {
        return err(s.i, "trailing characters");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(s: &str) -> bool {
        scan_top(s.as_bytes()).is_ok()
    }

    #[test]
    fn agrees_with_serde_json_on_samples() {
        let samples = [
            "{}",
            "[]",
            "1",
            "-0",
            "0.5e-3",
            "\"a\\u00e9\\n\"",
            "{\"a\":[1,{\"b\":null}],\"c\":true}",
            " {\"a\" : 1 } ",
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\u{1}b\"",
            "\"unterminated",
            "[1 2]",
            "{} {}",
            "",
            " ",
            "\"\u{2028}\"",
            "\"long string without specials inside, more than eight bytes\"",
            "\"\\\"quoted\\\" é 漢字\"",
            "[[[[[]]]]]",
            "{\"a\":{\"b\":{\"c\":[]}}}",
            "\"\\ud800\"",
            "-",
            "-a",
            "1.5E+10",
            "[\"\t\"]",
        ];
        for s in samples {
            let expected = serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok();
            assert_eq!(valid(s), expected, "{s:?}");
        }
    }

    #[test]
    fn swar_finds_specials_at_every_position() {
        for pos in 0..20 {
            for special in ['"', '\\', '\u{1f}'] {
                let mut body: Vec<char> = "abcdefghijklmnopqrstuvwxyz".chars().collect();
                body[pos] = special;
                let s: String = format!("\"{}\"", body.into_iter().collect::<String>());
                let expected = serde_json::from_str::<serde::de::IgnoredAny>(&s).is_ok();
                assert_eq!(valid(&s), expected, "{s:?}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// The scanner accepts exactly what serde_json accepts, on JSON-like noise.
        #[test]
        fn agrees_with_serde_json(s in "[ \\[\\]{}:,\"\\\\/a-fnrtu0-9.eE+\\-\u{1}\u{e9}\u{2028}]{0,40}") {
            let expected = serde_json::from_str::<serde::de::IgnoredAny>(&s).is_ok();
            proptest::prop_assert_eq!(valid(&s), expected, "{:?}", s);
        }
    }

    #[test]
    fn depth_is_limited() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(!valid(&deep));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(valid(&ok));
        let obj = |n: usize| "{\"a\":".repeat(n) + "1" + &"}".repeat(n);
        assert!(valid(&obj(MAX_DEPTH)), "the top object counts as one level");
        assert!(!valid(&obj(MAX_DEPTH + 1)));
    }

    #[test]
    fn members_and_ranges() {
        let text = r#" {"jsonrpc":"2.0", "id" : 7 ,"k\"ey":[1, 2]} "#;
        let (t, top) = scan_top(text.as_bytes()).unwrap();
        let TopLevel::Object(m) = top else { panic!() };
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].key, &t[m[0].value.clone()]), ("jsonrpc", "\"2.0\""));
        assert_eq!((m[1].key, &t[m[1].value.clone()]), ("id", "7"));
        assert!(m[2].key_has_escape);
        assert_eq!(&t[m[2].value.clone()], "[1, 2]");
    }
}
