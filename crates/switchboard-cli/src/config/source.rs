//! A configuration file's text as a JSON value plus where each value stands.
//!
//! TOML, YAML and JSON are read by their own crates (`toml`, `serde-saphyr`,
//! `serde_json`); this module only keeps, for every value, its line and column,
//! keyed by the value's JSON Pointer, so that every later problem can name its
//! place. It must not know what the keys mean.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

/// A place in the file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

/// The file formats, told apart by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Yaml,
    Json,
}

impl Format {
    /// `.toml`, `.yaml`/`.yml`, `.json`; anything else is refused by the caller.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// The parsed file: its value and the places of its values.
#[derive(Debug)]
pub struct Source {
    pub value: Value,
    /// JSON Pointer (RFC 6901) of a value → where it starts. Empty when the
    /// format's parser gave no places.
    places: HashMap<String, Pos>,
}

/// A syntax error: the parser's message and, when it gave one, the place.
#[derive(Debug)]
pub struct SyntaxError {
    pub pos: Option<Pos>,
    pub message: String,
}

impl Source {
    /// Parses `text` as `format`.
    pub fn parse(text: &str, format: Format) -> Result<Source, Vec<SyntaxError>> {
        match format {
            Format::Toml => parse_toml(text),
            Format::Yaml => parse_yaml(text),
            Format::Json => parse_json(text),
        }
    }

    /// Where the value at `pointer` starts, or, failing that, its nearest
    /// enclosing value that has a place.
    pub fn place(&self, pointer: &str) -> Option<Pos> {
        let mut p = pointer;
        loop {
            if let Some(pos) = self.places.get(p) {
                return Some(*pos);
            }
            p = &p[..p.rfind('/')?];
        }
    }
}

/// One JSON Pointer token (RFC 6901 §3: `~` → `~0`, `/` → `~1`).
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A value of any format, generic over its children's node type so that each
/// format's own span wrapper can sit around every level.
enum Raw<N> {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Seq(Vec<N>),
    Map(Vec<(String, N)>),
}

impl<'de, N: Deserialize<'de>> Deserialize<'de> for Raw<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<N>(std::marker::PhantomData<N>);
        impl<'de, N: Deserialize<'de>> Visitor<'de> for V<N> {
            type Value = Raw<N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number, boolean, list or table")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Raw<N>, E> {
                Ok(Raw::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Raw<N>, E> {
                Ok(Raw::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw<N>, E> {
                Ok(Raw::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw<N>, E> {
                Ok(Raw::Number(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw<N>, E> {
                Ok(Raw::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw<N>, E> {
                Number::from_f64(v)
                    .map(Raw::Number)
                    .ok_or_else(|| E::custom(format!("{v} is not a number JSON can hold")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw<N>, E> {
                Ok(Raw::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Raw<N>, E> {
                Ok(Raw::String(v))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw<N>, D::Error> {
                Raw::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw<N>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Raw::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<N>, A::Error> {
                let mut members: Vec<(String, N)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if members.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("duplicate key {key:?}")));
                    }
                    let value = map.next_value()?;
                    members.push((key, value));
                }
                Ok(Raw::Map(members))
            }
        }
        deserializer.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Flattens a tree of `Raw` nodes into a `Value` and the places map.
trait Node: Sized {
    fn into_parts(self, text: &str) -> (Option<Pos>, Raw<Self>);
}

fn flatten<N: Node>(
    node: N,
    text: &str,
    pointer: &mut String,
    places: &mut HashMap<String, Pos>,
) -> Value {
    let (pos, raw) = node.into_parts(text);
    if let Some(pos) = pos {
        places.insert(pointer.clone(), pos);
    }
    match raw {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Number(n) => Value::Number(n),
        Raw::String(s) => Value::String(s),
        Raw::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                out.push(flatten(item, text, pointer, places));
                pointer.truncate(len);
            }
            Value::Array(out)
        }
        Raw::Map(members) => {
            let mut out = Map::new();
            for (key, value) in members {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&pointer_token(&key));
                let v = flatten(value, text, pointer, places);
                pointer.truncate(len);
                out.insert(key, v);
            }
            Value::Object(out)
        }
    }
}

fn flatten_root<N: Node>(root: N, text: &str) -> Source {
    let mut places = HashMap::new();
    let value = flatten(root, text, &mut String::new(), &mut places);
    Source { value, places }
}

/// Line and column (1-based, columns in characters) of a byte offset.
fn pos_of_offset(text: &str, offset: usize) -> Pos {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() as u64 + 1;
    Pos { line, column }
}

struct TomlNode(toml::Spanned<Raw<TomlNode>>);

impl<'de> Deserialize<'de> for TomlNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        toml::Spanned::deserialize(d).map(TomlNode)
    }
}

impl Node for TomlNode {
    fn into_parts(self, text: &str) -> (Option<Pos>, Raw<Self>) {
        let pos = pos_of_offset(text, self.0.span().start);
        (Some(pos), self.0.into_inner())
    }
}

fn parse_toml(text: &str) -> Result<Source, Vec<SyntaxError>> {
    match toml::from_str::<TomlNode>(text) {
        Ok(root) => Ok(flatten_root(root, text)),
        Err(e) => Err(vec![SyntaxError {
            pos: e.span().map(|s| pos_of_offset(text, s.start)),
            message: first_line(e.message()),
        }]),
    }
}

/// A JSON value without places (serde_json gives none).
struct JsonNode(Raw<JsonNode>);

impl<'de> Deserialize<'de> for JsonNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Raw::deserialize(d).map(JsonNode)
    }
}

impl Node for JsonNode {
    fn into_parts(self, _text: &str) -> (Option<Pos>, Raw<Self>) {
        (None, self.0)
    }
}

struct YamlNode(serde_saphyr::Spanned<Raw<YamlNode>>);

impl<'de> Deserialize<'de> for YamlNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_saphyr::Spanned::deserialize(d).map(YamlNode)
    }
}

impl Node for YamlNode {
    fn into_parts(self, _text: &str) -> (Option<Pos>, Raw<Self>) {
        let at = self.0.referenced;
        let pos = (at.line() > 0).then(|| Pos {
            line: at.line(),
            column: at.column(),
        });
        (pos, self.0.value)
    }
}

fn parse_yaml(text: &str) -> Result<Source, Vec<SyntaxError>> {
    match serde_saphyr::from_str::<YamlNode>(text) {
        Ok(root) => Ok(flatten_root(root, text)),
        Err(e) => Err(vec![yaml_error(&e)]),
    }
}

fn yaml_error(e: &serde_saphyr::Error) -> SyntaxError {
    let pos = e.location().and_then(|at| {
        (at.line() > 0).then(|| Pos {
            line: at.line(),
            column: at.column(),
        })
    });
    SyntaxError {
        pos,
        message: without_yaml_place(&first_line(&e.to_string())),
    }
}

/// serde-saphyr starts its message with `error: line L column C: `; the place
/// is printed once, before it.
fn without_yaml_place(message: &str) -> String {
    let m = message.strip_prefix("error: ").unwrap_or(message);
    if let Some(rest) = m.strip_prefix("line ") {
        if let Some((place, what)) = rest.split_once(": ") {
            if place.split(" column ").all(|n| n.parse::<u64>().is_ok()) {
                return what.to_owned();
            }
        }
    }
    m.to_owned()
}

/// JSON: `serde_json` decides what is valid JSON and gives the value; places
/// come from reading the same text as YAML (JSON is YAML 1.2's flow style),
/// when that reads it to the same value. Otherwise problems name key paths only.
fn parse_json(text: &str) -> Result<Source, Vec<SyntaxError>> {
    // JSONC, as VS Code writes `.vscode/mcp.json`: comments and trailing
    // commas become spaces, so every place stays where it was.
    let mut stripped = text.to_owned();
    if json_strip_comments::strip(&mut stripped).is_err() {
        stripped = text.to_owned();
    }
    let text = stripped.as_str();
    // Through `Raw`, so that a key given twice is refused as in TOML and YAML
    // (serde_json's own `Value` keeps the last one silently).
    let value = serde_json::from_str::<JsonNode>(text).map(|root| {
        let mut places = HashMap::new();
        flatten(root, text, &mut String::new(), &mut places)
    });
    let value: Value = value.map_err(|e| {
        vec![SyntaxError {
            pos: (e.line() > 0).then(|| Pos {
                line: e.line() as u64,
                // serde_json counts 0 at the start of a line (an empty file).
                column: (e.column() as u64).max(1),
            }),
            message: first_line(&strip_serde_json_place(&e.to_string())),
        }]
    })?;
    match parse_yaml(text) {
        Ok(placed) if placed.value == value => Ok(placed),
        _ => Ok(Source {
            value,
            places: HashMap::new(),
        }),
    }
}

/// serde_json appends " at line L column C"; the place is printed separately.
fn strip_serde_json_place(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64, column: u64) -> Option<Pos> {
        Some(Pos { line, column })
    }

    #[test]
    fn toml_values_keep_their_places() {
        let text =
            "listen = \"127.0.0.1:1\"\n\n[upstreams.a]\ncommand = \"x\"\nargs = [\"p\", \"q\"]\n";
        let s = Source::parse(text, Format::Toml).unwrap();
        assert_eq!(s.value["upstreams"]["a"]["args"][1], "q");
        assert_eq!(s.place("/listen"), at(1, 10));
        assert_eq!(s.place("/upstreams/a/command"), at(4, 11));
        assert_eq!(s.place("/upstreams/a/args/1"), at(5, 14));
        // A pointer with no value of its own falls back to its parent.
        assert_eq!(s.place("/upstreams/a/args/1/x"), at(5, 14));
    }

    #[test]
    fn yaml_values_keep_their_places() {
        let text = "upstreams:\n  a:\n    command: x\n    args: [p, q]\n";
        let s = Source::parse(text, Format::Yaml).unwrap();
        assert_eq!(s.value["upstreams"]["a"]["command"], "x");
        assert_eq!(s.place("/upstreams/a/command"), at(3, 14));
        assert_eq!(s.place("/upstreams/a/args/1"), at(4, 15));
    }

    #[test]
    fn json_values_get_places_through_yaml() {
        let text = "{\n  \"mcpServers\": {\n    \"a/b\": {\"command\": \"x\"}\n  }\n}\n";
        let s = Source::parse(text, Format::Json).unwrap();
        assert_eq!(s.value["mcpServers"]["a/b"]["command"], "x");
        assert_eq!(s.place("/mcpServers/a~1b/command"), at(3, 24));
    }

    #[test]
    fn json_read_differently_as_yaml_keeps_serde_jsons_value_without_places() {
        // A tab before a value is fine JSON; whatever YAML makes of it, the value
        // served is serde_json's.
        let text = "{\"a\":\t1, \"b\": \"\\u00e9\"}";
        let s = Source::parse(text, Format::Json).unwrap();
        assert_eq!(s.value, serde_json::json!({"a": 1, "b": "é"}));
    }

    #[test]
    fn syntax_errors_name_their_place() {
        let e = Source::parse("a = [1,\n", Format::Toml).unwrap_err();
        assert!(e[0].pos.is_some_and(|p| p.line >= 1), "{e:?}");
        let e = Source::parse("{\"a\": 1,,}", Format::Json).unwrap_err();
        assert_eq!(e[0].pos, at(1, 9));
        assert!(!e[0].message.contains("at line"), "{}", e[0].message);
        let e = Source::parse("a: [1\nb: 2\n", Format::Yaml).unwrap_err();
        assert!(e[0].pos.is_some(), "{e:?}");
        // The place once: before the message, not inside it too.
        let e = Source::parse("b:\n - x: [\n", Format::Yaml).unwrap_err();
        assert_eq!(e[0].pos, at(2, 7), "{e:?}");
        assert_eq!(e[0].message, "unclosed bracket '['");
    }

    #[test]
    fn duplicate_keys_are_errors() {
        assert!(Source::parse("a: 1\na: 2\n", Format::Yaml).is_err());
        assert!(Source::parse("a = 1\na = 2\n", Format::Toml).is_err());
        let e = Source::parse("{\"a\": {\"c\": 1,\n \"c\": 2}}", Format::Json).unwrap_err();
        assert!(e[0].message.contains("duplicate key \"c\""), "{e:?}");
        assert_eq!(e[0].pos.map(|p| p.line), Some(2));
    }

    #[test]
    fn pointer_tokens_escape_tilde_and_slash() {
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
    }

    #[test]
    fn offsets_count_characters_not_bytes() {
        assert_eq!(pos_of_offset("é = 1\nb", 8), Pos { line: 2, column: 2 });
        assert_eq!(pos_of_offset("ab", 1), Pos { line: 1, column: 2 });
    }
}
