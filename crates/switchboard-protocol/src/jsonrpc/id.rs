//! Request ids, kept exactly as received.
//!
//! JSON-RPC 2.0 §4 lets an id be a string, a number or null; MCP (every revision,
//! "Requests" in the base protocol) narrows it to a string or an integer and forbids
//! null. An integer id is stored as its literal text, so `0` stays `0`, `-0` stays
//! `-0` and `123456789012345678901234567890` is not rounded through `f64`.
//!
//! "Integer" is the schemas' word (`RequestId` is `{"type": ["string",
//! "integer"]}` in every revision's `schema.json`), and JSON Schema counts any
//! number with a zero fractional part as an integer: `1.0`, `1e3` and `-2.50e1`
//! are integer ids too, kept as written like the others. `1.5` and `1e-1` are
//! not.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::number;

/// A JSON-RPC request id: a string or an integer (MCP base protocol, all revisions).
///
/// Two integer ids are equal when they are the same number, however written:
/// `1`, `1.0` and `1e0` are one id, and so are `0` and `-0` (JSON has one value
/// for them, and JSON-RPC 2.0 §5 asks for "the same value" back); each is still
/// written back as it was sent. A string and an integer always differ: `1` and
/// `"1"` are two ids.
///
/// The order (`Ord`) is that of a canonical text of the value (the plain digits,
/// or for a value of more than 64 digits its significant digits and an
/// exponent), for use as a map key: it is not numeric (`10` sorts before `9`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer id, as its JSON literal text: a JSON number whose value is a
    /// whole number (`7`, `-0`, `1.0`, `1e3`; see the module documentation).
    Int(IntId),
    /// A string id, decoded (escapes resolved).
    Str(String),
}

/// The literal text of an integer id; see [`Id::Int`].
///
/// Equality, hashing and order are those of the value (see [`Id`]). Plain digits
/// of up to 23 bytes (every `i64` and `u64`) are held inline, so making, cloning
/// and dropping the id of a request allocates nothing; longer literals are kept
/// on the heap, and a literal in another form (`1.0`, `1e3`, `-0`) beside its
/// canonical text.
#[derive(Clone)]
pub struct IntId(IntText);

/// How many bytes of literal text an [`IntId`] holds without allocating (23).
const INLINE: usize = 23;

#[derive(Clone)]
enum IntText {
    /// Plain canonical digits (`-?[1-9][0-9]*` or `0`), inline.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// Plain canonical digits, longer.
    Heap(Box<str>),
    /// Another spelling: the literal, then the canonical text of its value
    /// ([`number::canonical`]).
    Spelled(Box<(Box<str>, Box<str>)>),
}

impl IntId {
    /// Wraps literal text already checked to be an integer-valued JSON number.
    fn from_checked(text: &str) -> IntId {
        if !is_plain_canonical(text) {
            if let Some(canonical) = number::canonical(text).filter(|c| c != text) {
                return IntId(IntText::Spelled(Box::new((text.into(), canonical.into()))));
            }
        }
        IntId::from_plain(text)
    }

    /// Wraps plain canonical digits (see [`is_plain_canonical`]): inline up to
    /// [`INLINE`] bytes, else on the heap.
    fn from_plain(text: &str) -> IntId {
        if text.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            IntId(IntText::Inline {
                len: text.len() as u8,
                bytes,
            })
        } else {
            IntId(IntText::Heap(text.into()))
        }
    }

    /// The literal text, e.g. `"42"`, `"-7"` or `"1e3"`.
    pub fn as_str(&self) -> &str {
        // Only the ASCII of a JSON number is ever stored.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The literal text's bytes: what equality, hashing and order compare (the
    /// order of UTF-8 bytes is that of the text), without re-checking UTF-8 on
    /// every map lookup.
    fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            IntText::Inline { len, bytes } => &bytes[..usize::from(*len)],
            IntText::Heap(text) => text.as_bytes(),
            IntText::Spelled(both) => both.0.as_bytes(),
        }
    }

    /// The canonical text's bytes: what equality, hashing and order compare.
    fn key(&self) -> &[u8] {
        match &self.0 {
            IntText::Spelled(both) => both.1.as_bytes(),
            _ => self.as_bytes(),
        }
    }

    /// The value when it fits an `i64`, whatever the literal's form: `1e3`
    /// gives 1000, `-0` and `0.0` give 0.
    pub fn as_i64(&self) -> Option<i64> {
        // The canonical text is plain digits for every value that fits.
        std::str::from_utf8(self.key()).ok()?.parse().ok()
    }

    /// The value when the literal is plain digits (`-?(0|[1-9][0-9]*)`) that
    /// fit an `i64`, except `-0`: the ids written back as a number token.
    fn plain_i64(&self) -> Option<i64> {
        match &self.0 {
            IntText::Spelled(_) => None,
            _ => self.as_str().parse().ok(),
        }
    }

    /// Checks `text` is a JSON number literal (RFC 8259 §6:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`) whose value is a
    /// whole number.
    pub fn parse(text: &str) -> Option<IntId> {
        // Nearly every id: plain digits, already canonical, no second scan.
        if is_plain_canonical(text) {
            return Some(IntId::from_plain(text));
        }
        number::is_whole(text).then(|| IntId::from_checked(text))
    }
}

/// Whether `text` is plain digits that are their own canonical text
/// ([`number::canonical`]): `0`, or an optional `-` and up to 64 digits with no
/// leading zero. Not `-0` (canonically `0`).
fn is_plain_canonical(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
    match digits {
        [] => false,
        [b'0'] => text.len() == 1,
        [b'0', ..] => false,
        d => d.len() <= 64 && d.iter().all(u8::is_ascii_digit),
    }
}

impl PartialEq for IntId {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for IntId {}

impl std::hash::Hash for IntId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialOrd for IntId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IntId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(other.key())
    }
}

/// Formats `n` into a stack buffer (at most 20 bytes for a 64-bit integer).
fn int_id(n: impl fmt::Display) -> IntId {
    use std::io::Write as _;
    let mut buf = [0u8; INLINE];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(cursor, "{n}");
    let len = cursor.position() as usize;
    IntId::from_plain(std::str::from_utf8(&buf[..len]).unwrap_or("0"))
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Int(int_id(n))
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Int(int_id(n))
    }
}

impl From<i32> for Id {
    fn from(n: i32) -> Self {
        Id::from(i64::from(n))
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::Str(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::Str(s)
    }
}

/// Why a JSON value is not a valid id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdError {
    /// `null`: MCP forbids it on requests (and it is not a notification either).
    Null,
    /// A number that is not a whole number (`1.5`, `1e-1`), a boolean, an array
    /// or an object.
    NotStringOrInteger,
    /// A string that cannot be decoded: an escape for half of a UTF-16
    /// surrogate pair (`"\ud800"`), which no Unicode string can hold.
    BadString,
}

impl Id {
    /// Reads an id from the raw JSON text of the `id` member.
    ///
    /// Errors: [`IdError::Null`] for `null`, [`IdError::BadString`] for a string
    /// with a lone surrogate escape, [`IdError::NotStringOrInteger`] for
    /// anything but a string or an integer-valued number.
    pub fn from_raw(raw: &RawValue) -> Result<Id, IdError> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map(Id::Str)
                .map_err(|_| IdError::BadString),
            Some(b'n') => Err(IdError::Null),
            _ => IntId::parse(text)
                .map(Id::Int)
                .ok_or(IdError::NotStringOrInteger),
        }
    }

    /// The integer value when this is an integer id that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Id::Int(n) => n.as_i64(),
            Id::Str(_) => None,
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Shows the id as its JSON text: `7` or `"7"`.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(n) => f.write_str(n.as_str()),
            Id::Str(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Str(s) => serializer.serialize_str(s),
            Id::Int(n) => {
                match n.plain_i64() {
                    Some(v) => serializer.serialize_i64(v),
                    None => {
                        // Beyond i64, `-0`, `1.0`, `1e3`: emit the literal itself
                        // so nothing is rounded or rewritten.
                        let raw = RawValue::from_string(n.as_str().to_owned())
                            .map_err(serde::ser::Error::custom)?;
                        raw.serialize(serializer)
                    }
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    /// Accepts a string or an integer that fits `i64`/`u64`, from any deserializer
    /// (so typed messages with flattened members work). Wider integers are refused
    /// here; the envelope path ([`Id::from_raw`]) keeps them exactly.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> de::Visitor<'de> for IdVisitor {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer (MCP request id or progress token)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::from(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id::from(v))
            }
            /// `1.0` or `1e3` read into a number first: the value is kept
            /// (as `1`, `1000`), not the literal; only [`Id::from_raw`] keeps that.
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                // Whole and within ±2^53, where an f64 holds every integer exactly.
                const EXACT: f64 = 9_007_199_254_740_992.0;
                if v.fract() == 0.0 && v.abs() <= EXACT {
                    Ok(Id::from(v as i64))
                } else {
                    Err(E::custom(
                        "id must be a string or an integer, not a fractional or out-of-range number",
                    ))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id::Str(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Id, E> {
                Ok(Id::Str(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Err(E::custom("id must not be null"))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn integers_are_kept_as_written() {
        for text in [
            "0",
            "-0",
            "7",
            "-12",
            "9007199254740993",
            "123456789012345678901234567890",
        ] {
            let id = Id::from_raw(&raw(text)).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
        }
    }

    #[test]
    fn strings_and_integers_differ() {
        let a = Id::from_raw(&raw("0")).unwrap();
        let b = Id::from_raw(&raw("\"0\"")).unwrap();
        assert_ne!(a, b);
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"0\"");
        assert_eq!(a.to_string(), "0");
        assert_eq!(b.to_string(), "\"0\"");
    }

    #[test]
    fn rejects_null_fractions_and_others() {
        assert_eq!(Id::from_raw(&raw("null")), Err(IdError::Null));
        for text in [
            "01", "-", "", "+1", " 1", "1.", ".5", "1e", "1e+", "--1", "1.5", "1e-1", "0.01e1",
            "2.5e0", "1x",
        ] {
            assert!(IntId::parse(text).is_none(), "{text:?} is no integer");
        }
        for text in ["1.5", "1e-1", "-2.25", "true", "[]", "{}"] {
            assert_eq!(
                Id::from_raw(&raw(text)).err(),
                Some(IdError::NotStringOrInteger),
                "{text}"
            );
        }
        assert_eq!(Id::from_raw(&raw(r#""\ud800""#)), Err(IdError::BadString));
    }

    /// JSON Schema's `integer` (the schemas' `RequestId`) is any whole number:
    /// such ids are accepted, kept as written, and read for their value.
    #[test]
    fn whole_numbers_in_any_form_are_integer_ids_kept_as_written() {
        for (text, value) in [
            ("1.0", Some(1)),
            ("1e3", Some(1000)),
            ("1E+3", Some(1000)),
            ("-2.50e1", Some(-25)),
            ("10e-1", Some(1)),
            ("0.0", Some(0)),
            ("-0.0e-7", Some(0)),
            ("0e999", Some(0)),
            ("1.000000000000000000000000000001e30", None),
            ("9.223372036854775807e18", Some(i64::MAX)),
            ("-9.223372036854775808e18", Some(i64::MIN)),
            ("9.223372036854775808e18", None),
            ("1e400", None),
        ] {
            let id = Id::from_raw(&raw(text)).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                text,
                "written back as sent"
            );
            assert_eq!(id.to_string(), text);
            assert_eq!(id.as_i64(), value, "{text}");
        }
        // Equality is of the value: `1.0`, `1e0` and `1` are one id (and hash
        // alike), each written back as sent; a string `"1"` is another.
        use std::collections::HashSet;
        let forms: Vec<Id> = ["1.0", "1e0", "10e-1", "1"]
            .iter()
            .map(|t| Id::from_raw(&raw(t)).unwrap())
            .collect();
        let set: HashSet<Id> = forms.iter().cloned().collect();
        assert_eq!(set.len(), 1, "{forms:?}");
        assert!(set.contains(&Id::from(1)));
        assert_ne!(forms[0], Id::from("1"));
        assert_eq!(
            Id::from_raw(&raw("1e400")).unwrap(),
            Id::from_raw(&raw("10e399")).unwrap()
        );
        // The typed path (a number read first) keeps the value.
        let typed: Id = serde_json::from_str("1.0").unwrap();
        assert_eq!(typed, Id::from(1));
        assert!(serde_json::from_str::<Id>("1.5").is_err());
        assert!(serde_json::from_str::<Id>("1e300").is_err());
    }

    /// The fast path (plain digits) stores exactly what the canonical text
    /// would be, so an id read either way compares and hashes alike.
    #[test]
    fn plain_digits_are_their_own_canonical_text() {
        let long = "7".repeat(64);
        let longer = "7".repeat(65);
        let minus_long = format!("-{long}");
        for text in ["0", "7", "-12", "1000", long.as_str(), minus_long.as_str()] {
            assert!(is_plain_canonical(text), "{text}");
            assert_eq!(number::canonical(text).as_deref(), Some(text), "{text}");
        }
        for text in ["-0", "01", "", "-", "1.0", "1e3", longer.as_str()] {
            assert!(!is_plain_canonical(text), "{text}");
        }
        // 65 digits: stored beside its canonical text, equal to the same
        // value written with an exponent.
        let spelled = format!("7.{}e64", "7".repeat(64));
        assert_eq!(
            Id::from_raw(&raw(&longer)).unwrap(),
            Id::from_raw(&raw(&spelled)).unwrap()
        );
    }

    #[test]
    fn string_escapes_are_decoded_and_reencoded() {
        let id = Id::from_raw(&raw(r#""a\u0000\"b""#)).unwrap();
        assert_eq!(id, Id::Str("a\0\"b".into()));
        let back = serde_json::to_string(&id).unwrap();
        assert_eq!(Id::from_raw(&raw(&back)).unwrap(), id);
    }

    /// Inline and heap-held literals behave alike: text, equality, order, hashing
    /// and the JSON written back.
    #[test]
    fn short_and_long_integer_ids_keep_their_text() {
        use std::collections::HashSet;
        let texts = [
            "0",
            "7",
            "-9223372036854775808",
            "18446744073709551615",
            "12345678901234567890123",
            "123456789012345678901234",
            "-123456789012345678901234567890",
        ];
        let mut set = HashSet::new();
        for text in texts {
            let raw = RawValue::from_string(text.to_owned()).unwrap();
            let id = Id::from_raw(&raw).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
            assert_eq!(id.clone(), id);
            assert!(set.insert(id.clone()), "{text} hashed like another id");
            assert!(set.contains(&Id::from_raw(&raw).unwrap()));
        }
        assert_eq!(
            Id::from(i64::MIN),
            Id::from_raw(&RawValue::from_string("-9223372036854775808".into()).unwrap()).unwrap()
        );
        assert_eq!(Id::from(u64::MAX).to_string(), "18446744073709551615");
        // One number, one id: `-0` is `0`, and is written back as `-0`.
        let minus_zero = Id::from_raw(&RawValue::from_string("-0".into()).unwrap()).unwrap();
        assert_eq!(Id::from(0), minus_zero);
        assert_eq!(serde_json::to_string(&minus_zero).unwrap(), "-0");
        let mut sorted: Vec<Id> = ["9", "10", "123456789012345678901234"]
            .iter()
            .map(|t| Id::from_raw(&RawValue::from_string((*t).to_owned()).unwrap()).unwrap())
            .collect();
        sorted.sort();
        let order: Vec<String> = sorted.iter().map(|i| i.to_string()).collect();
        assert_eq!(order, ["10", "123456789012345678901234", "9"]);
    }
}
