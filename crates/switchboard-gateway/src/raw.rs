//! A JSON object edited member by member with every value kept as its raw text.
//!
//! The bridge sometimes has to change one member of a message it forwards (a
//! progress token mapped, the 2026-07-28 `_meta` members removed for a legacy
//! child). Decoding the object into `serde_json::Value` to do that would write
//! every other value back through serde's number model: an integer wider than 64
//! bits rounded to an `f64`, `-0` written `-0.0`, `1.50` written `1.5`, and
//! `1e400` (valid JSON, beyond `f64`) refused outright. [`RawObject`] decodes
//! only the keys; each value stays the text the peer wrote.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of one JSON object in their order, each value as raw JSON.
/// A key that appears twice keeps its first place and its last value (as
/// `serde_json::Map` with `preserve_order` does).
#[derive(Debug, Default)]
pub(crate) struct RawObject(Vec<(String, Box<RawValue>)>);

impl RawObject {
    /// Parses `text`, which must be one JSON object.
    pub(crate) fn parse(text: &str) -> Result<RawObject, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The raw value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// The value of `key` when it is itself an object.
    pub(crate) fn get_object(&self, key: &str) -> Option<RawObject> {
        let v = self.get(key)?;
        v.get()
            .starts_with('{')
            .then(|| RawObject::parse(v.get()).ok())
            .flatten()
    }

    /// Sets `key` to `value`, in its place when it is there, else at the end.
    pub(crate) fn insert(&mut self, key: &str, value: Box<RawValue>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    /// Keeps the members whose key `keep` accepts; whether any was removed.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) -> bool {
        let before = self.0.len();
        self.0.retain(|(k, _)| keep(k));
        self.0.len() != before
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The object as JSON text: the keys escaped again, the values as they were.
    pub(crate) fn to_raw(&self) -> Box<RawValue> {
        let mut s = String::with_capacity(
            2 + self
                .0
                .iter()
                .map(|(k, v)| k.len() + v.get().len() + 4)
                .sum::<usize>(),
        );
        s.push('{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            // A `String` always serializes.
            s.push_str(&serde_json::to_string(k).unwrap_or_default());
            s.push(':');
            s.push_str(v.get());
        }
        s.push('}');
        // Valid JSON by construction: escaped keys and values that were raw JSON.
        RawValue::from_string(s).unwrap_or_else(|_| crate::upstream::empty_object())
    }
}

impl<'de> serde::Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject, A::Error> {
                let mut o = RawObject(Vec::with_capacity(map.size_hint().unwrap_or(4)));
                while let Some(k) = map.next_key::<String>()? {
                    let v = map.next_value::<Box<RawValue>>()?;
                    o.insert(&k, v);
                }
                Ok(o)
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// The object `result` with its array member `member` narrowed to the items
/// `keep` accepts; the items kept, and every other member, stay as written.
/// `None` when `result` is not an object whose `member` is an array.
pub(crate) fn retain_items(
    result: &RawValue,
    member: &str,
    mut keep: impl FnMut(&RawValue) -> bool,
) -> Option<Box<RawValue>> {
    edit_items(result, member, |item| {
        if keep(item) {
            Item::Keep
        } else {
            Item::Drop
        }
    })
}

/// What becomes of one item of a list ([`edit_items`]).
pub(crate) enum Item {
    Drop,
    Keep,
    Replace(Box<RawValue>),
}

/// [`retain_items`], where an item may also be replaced.
pub(crate) fn edit_items(
    result: &RawValue,
    member: &str,
    mut edit: impl FnMut(&RawValue) -> Item,
) -> Option<Box<RawValue>> {
    let mut obj = RawObject::parse(result.get()).ok()?;
    let items: Vec<&RawValue> = serde_json::from_str(obj.get(member)?.get()).ok()?;
    let mut kept = String::from("[");
    for item in items {
        let text = match edit(item) {
            Item::Drop => continue,
            Item::Keep => item.get().to_owned(),
            Item::Replace(new) => new.get().to_owned(),
        };
        if kept.len() > 1 {
            kept.push(',');
        }
        kept.push_str(&text);
    }
    kept.push(']');
    obj.insert(member, RawValue::from_string(kept).ok()?);
    Some(obj.to_raw())
}

/// `s`, which must be valid JSON, as a raw value: for the crate's tests.
#[cfg(test)]
pub(crate) fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).expect("valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_as_written() {
        let text = r#"{"a":123456789012345678901234567890, "b" : -0,"c":1.50,"d":1e400,"e":"\u00e9","f":{"g":[1.0]}}"#;
        let mut o = RawObject::parse(text).unwrap();
        assert_eq!(o.get("d").unwrap().get(), "1e400");
        o.insert("b", RawValue::from_string("\"x\"".into()).unwrap());
        assert!(o.remove("c").is_some());
        assert_eq!(
            o.to_raw().get(),
            r#"{"a":123456789012345678901234567890,"b":"x","d":1e400,"e":"\u00e9","f":{"g":[1.0]}}"#
        );
        assert_eq!(o.get_object("f").unwrap().get("g").unwrap().get(), "[1.0]");
        assert!(o.get_object("a").is_none());
    }

    #[test]
    fn keys_are_escaped_again_and_duplicates_keep_the_last_value() {
        let o = RawObject::parse(r#"{"q\"k\u00e9":1,"a":1,"a":2}"#).unwrap();
        assert_eq!(o.to_raw().get(), "{\"q\\\"ké\":1,\"a\":2}");
        assert!(RawObject::parse("[1]").is_err());
        assert!(RawObject::parse("{} x").is_err());
    }
}
