//! Turning `--args JSON` and `--arg key=value` into the `arguments` of a
//! `tools/call` (guided by the tool's `inputSchema`) or a `prompts/get` (strings
//! only; "Prompts" → `GetPromptRequest.params.arguments` is a string map).
//!
//! How a `--arg` value becomes JSON, by the property's declared `type` in
//! `inputSchema.properties` (a JSON Schema 2020-12 `type`, a string or an array of
//! them; `anyOf`/`oneOf` members' types count too; a `const`/`enum` of strings alone
//! counts as `string`):
//! - `string` (alone): the text as is, even if it looks like a number;
//! - `integer`: a whole number (`i64`/`u64`), or a number written with a
//!   fraction or an exponent that denotes one exactly (`3.0`, `1e3`: JSON Schema
//!   2020-12 counts them as integers), sent as the integer (`3`, `1000`); else an
//!   error (`4.5`, or `1e300`, past any `i64`/`u64`);
//! - `number`: any finite JSON number, else an error;
//! - `boolean`: `true` or `false`, else an error;
//! - `null`: `null`;
//! - `object` / `array`: JSON text of that kind, else an error;
//! - several types: the first of integer, number, boolean, null, object, array that
//!   fits, else a string if `string` is allowed, else an error;
//! - an undeclared property or no `type`: JSON if the text parses as JSON, else the
//!   text as a string.
//!
//! `--args` gives the whole object (`--args @FILE` from a file, `--args -` from
//! stdin: [`args_source`]; the reading is the caller's); each `--arg` then sets
//! (overrides) one key.
//!
//! Before a listed tool is called, its arguments are checked against its
//! `inputSchema` for what is certain ([`check_arguments`]): an argument it does
//! not declare, a required one missing.
//!
//! This module must not know about connections or output: it is pure.

use serde_json::{Map, Value};

/// The JSON types a property's schema allows, in the order tried (see the module
/// documentation); empty when the schema declares none.
fn declared_types(schema: &Value) -> Vec<String> {
    fn add(types: &mut Vec<String>, t: &str) {
        if !types.iter().any(|x| x == t) {
            types.push(t.to_owned());
        }
    }
    let mut types = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => add(&mut types, t),
        Some(Value::Array(ts)) => {
            for t in ts.iter().filter_map(Value::as_str) {
                add(&mut types, t);
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = schema.get(key) {
            for t in members.iter().flat_map(declared_types) {
                add(&mut types, &t);
            }
        }
    }
    let strings_only = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    if types.is_empty()
        && (schema.get("const").is_some_and(Value::is_string)
            || schema.get("enum").is_some_and(strings_only))
    {
        add(&mut types, "string");
    }
    types
}

/// The integer that the JSON number `text` denotes exactly (`3.0`, `1e3`,
/// `-2.50e1`), read from its decimal digits (no rounding through a double;
/// [`switchboard_protocol::jsonrpc::number`]), or `None` when it has a
/// fractional part, is not a JSON number, or does not fit an `i64`/`u64`.
fn whole_number(text: &str) -> Option<Value> {
    let n = switchboard_protocol::jsonrpc::number::whole_value(text)?;
    i64::try_from(n)
        .map(Value::from)
        .ok()
        .or_else(|| u64::try_from(n).ok().map(Value::from))
}

/// Parses `text` as JSON of the declared type `ty`, or `None` when it does not fit.
fn parse_as(ty: &str, text: &str) -> Option<Value> {
    match ty {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok()
            .or_else(|| whole_number(text)),
        "number" => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Number(_)) => Some(v),
            _ => None,
        },
        "boolean" => match text {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => (text == "null").then_some(Value::Null),
        "object" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object),
        "array" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_array),
        "string" => Some(Value::String(text.to_owned())),
        _ => None,
    }
}

/// The JSON value of `--arg key=text` for a property whose schema is `schema`
/// (`None`: not declared). Errors name the key and the expected type.
pub fn parse_value(key: &str, text: &str, schema: Option<&Value>) -> Result<Value, String> {
    let types = schema.map(declared_types).unwrap_or_default();
    if types.is_empty() {
        return Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())));
    }
    if types.len() == 1 && types[0] == "string" {
        return Ok(Value::String(text.to_owned()));
    }
    for ty in types.iter().filter(|t| *t != "string") {
        if let Some(v) = parse_as(ty, text) {
            return Ok(v);
        }
    }
    if types.iter().any(|t| t == "string") {
        return Ok(Value::String(text.to_owned()));
    }
    Err(format!(
        "--arg {key}={text}: expected {} (from the tool's inputSchema)",
        types.join(" or ")
    ))
}

/// Splits `key=value` at the first `=`. Errors: no `=` or an empty key.
pub fn split_pair(pair: &str) -> Result<(&str, &str), String> {
    match pair.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(format!("--arg {pair:?}: expected KEY=VALUE")),
    }
}

/// Where `--args VALUE` takes its JSON from ([`args_source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsSource {
    /// The value itself is the JSON.
    Inline(String),
    /// `@FILE`: the file's contents.
    File(std::path::PathBuf),
    /// `-`: standard input, to its end.
    Stdin,
}

/// What `--args VALUE` names: `-` is standard input, `@FILE` a file (no JSON
/// text starts with either), anything else the JSON itself.
pub fn args_source(value: &str) -> ArgsSource {
    match value {
        "-" => ArgsSource::Stdin,
        _ => match value.strip_prefix('@') {
            Some(path) => ArgsSource::File(path.into()),
            None => ArgsSource::Inline(value.to_owned()),
        },
    }
}

/// The JSON text of `--args` and where it came from (`--args`, `--args
/// @FILE`, `--args -`), which its errors name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsJson {
    /// How the errors name it, e.g. `--args @big.json`.
    pub origin: String,
    /// The JSON text.
    pub text: String,
}

impl ArgsJson {
    /// `--args JSON`, given on the command line.
    pub fn inline(text: impl Into<String>) -> Self {
        ArgsJson {
            origin: "--args".to_owned(),
            text: text.into(),
        }
    }
}

/// The kind of a JSON value, as an error names it.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses `--args`, which must be a JSON object. Errors name its origin and,
/// for text that is not JSON, the line and column (both from 1) where it
/// stops being JSON.
fn parse_object(json: &ArgsJson) -> Result<Map<String, Value>, String> {
    let origin = &json.origin;
    if json.text.trim().is_empty() {
        return Err(format!("{origin}: empty; expected a JSON object"));
    }
    match serde_json::from_str::<Value>(&json.text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "{origin}: expected a JSON object, not {}",
            kind_of(&other)
        )),
        Err(e) => {
            // serde_json ends its message with the position; said once, first.
            let text = e.to_string();
            let position = format!(" at line {} column {}", e.line(), e.column());
            let why = text.strip_suffix(&position).unwrap_or(&text);
            Err(format!(
                "{origin}: not JSON at line {}, column {}: {why}",
                e.line(),
                e.column()
            ))
        }
    }
}

/// The `arguments` object of a `tools/call`: `--args` (if any), then each `--arg`
/// (in order; later ones win) parsed against `input_schema` (the tool's
/// `inputSchema` object). Errors: one line naming the bad argument.
pub fn tool_arguments(
    input_schema: &Map<String, Value>,
    args_json: Option<&ArgsJson>,
    pairs: &[String],
) -> Result<Map<String, Value>, String> {
    let mut arguments = match args_json {
        Some(j) => parse_object(j)?,
        None => Map::new(),
    };
    let properties = input_schema.get("properties");
    for pair in pairs {
        let (key, text) = split_pair(pair)?;
        let schema = properties.and_then(|p| p.get(key));
        arguments.insert(key.to_owned(), parse_value(key, text, schema)?);
    }
    Ok(arguments)
}

/// `"a"` or `"a", "b"`: names quoted, for a message.
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The checks made locally of a listed tool's `arguments` against its
/// `inputSchema` before the call is sent ([`check_arguments`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// One line each (without `switchboard: warning: `): arguments the schema
    /// does not declare, which it does not forbid either; sent all the same.
    pub warnings: Vec<String>,
    /// Why the call is not sent (one line), when the schema refuses it:
    /// an argument it forbids, or a required one missing.
    pub refusal: Option<String>,
}

/// Checks `arguments` of the tool `tool` against its `inputSchema`, only for
/// what a reader of the schema can be sure of, leaving everything else to the
/// server:
/// - a key `properties` does not declare, when it declares some (or none,
///   given `additionalProperties: false`), and no `patternProperties` may
///   match it: with `additionalProperties: false` the schema forbids it (a
///   refusal); with no `additionalProperties` a warning (a typo, most
///   likely); with `additionalProperties` `true` or a schema, nothing. For
///   the warning, the properties of `allOf`/`anyOf`/`oneOf` members count as
///   declared too, and a `$ref` or `if` at the top skips it;
/// - a key of `required` missing: a refusal naming it and the required ones.
pub fn check_arguments(
    tool: &str,
    input_schema: &Map<String, Value>,
    arguments: &Map<String, Value>,
) -> Checked {
    let mut checked = Checked::default();
    let mut refusals = Vec::new();
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let closed = input_schema.get("additionalProperties") == Some(&Value::Bool(false));
    let open_ended = input_schema.contains_key("additionalProperties")
        || input_schema.contains_key("patternProperties");
    let declared: Vec<&str> = properties
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let listing = if declared.is_empty() {
        "it takes no arguments".to_owned()
    } else {
        format!("its arguments: {}", declared.join(", "))
    };
    let unknown = |known: &[&str]| -> Vec<&str> {
        arguments
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect()
    };
    let no_argument = |names: &[&str]| match names {
        [one] => format!("tool {tool:?} has no argument {one:?}"),
        _ => format!("tool {tool:?} has no arguments {}", quoted(names)),
    };
    if closed && !input_schema.contains_key("patternProperties") {
        let extra = unknown(&declared);
        if !extra.is_empty() {
            refusals.push(format!(
                "{} ({listing}; its inputSchema allows no others)",
                no_argument(&extra)
            ));
        }
    } else if properties.is_some()
        && !open_ended
        && !["$ref", "$dynamicRef", "if", "dependentSchemas"]
            .iter()
            .any(|k| input_schema.contains_key(*k))
    {
        let mut known = declared.clone();
        for key in ["allOf", "anyOf", "oneOf"] {
            for member in input_schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(p) = member.get("properties").and_then(Value::as_object) {
                    known.extend(p.keys().map(String::as_str));
                }
            }
        }
        let extra = unknown(&known);
        if !extra.is_empty() {
            checked
                .warnings
                .push(format!("{} ({listing})", no_argument(&extra)));
        }
    }
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|k| !arguments.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        let what = match missing.as_slice() {
            [one] => format!("the argument {one:?}"),
            _ => format!("the arguments {}", quoted(&missing)),
        };
        refusals.push(format!(
            "tool {tool:?} needs {what} (its required arguments: {})",
            required.join(", ")
        ));
    }
    if !refusals.is_empty() {
        checked.refusal = Some(format!("{}: not sent", refusals.join("; ")));
    }
    checked
}

/// The `arguments` of a `prompts/get` (a string map): `--args` (every value must be
/// a string), then each `--arg` as text. Errors: one line naming the bad argument.
pub fn prompt_arguments(
    args_json: Option<&ArgsJson>,
    pairs: &[String],
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut arguments = std::collections::BTreeMap::new();
    if let Some(j) = args_json {
        for (k, v) in parse_object(j)? {
            match v {
                Value::String(s) => {
                    arguments.insert(k, s);
                }
                other => {
                    return Err(format!(
                        "{}: prompt argument {k:?} must be a string, not {other}",
                        j.origin
                    ))
                }
            }
        }
    }
    for pair in pairs {
        let (k, v) = split_pair(pair)?;
        arguments.insert(k.to_owned(), v.to_owned());
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        let v = json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "s": {"type": "string"},
            "obj": {"type": "object"},
            "list": {"type": "array"},
            "maybe": {"type": ["integer", "string"]},
            "nullable": {"type": ["integer", "null"]},
            "choice": {"enum": ["a", "b"]},
            "union": {"anyOf": [{"type": "boolean"}, {"type": "object"}]},
            "free": {}
        }});
        v.as_object().cloned().expect("an object")
    }

    fn one(pair: &str) -> Result<Value, String> {
        let pairs = vec![pair.to_owned()];
        let m = tool_arguments(&schema(), None, &pairs)?;
        Ok(m.into_iter().next().expect("one key").1)
    }

    #[test]
    fn values_follow_the_declared_type() {
        assert_eq!(one("n=42").unwrap(), json!(42));
        assert_eq!(one("n=-7").unwrap(), json!(-7));
        assert_eq!(one("n=18446744073709551615").unwrap(), json!(u64::MAX));
        assert_eq!(one("n=-2.50e1").unwrap(), json!(-25));
        assert_eq!(one("n=1200e-2").unwrap(), json!(12));
        assert_eq!(one("n=0.0e5").unwrap(), json!(0));
        assert_eq!(
            one("n=9007199254740993.0").unwrap(),
            json!(9_007_199_254_740_993u64)
        );
        assert_eq!(one("x=2.5").unwrap(), json!(2.5));
        assert_eq!(one("x=3").unwrap(), json!(3));
        assert_eq!(one("flag=true").unwrap(), json!(true));
        assert_eq!(
            one("s=007").unwrap(),
            json!("007"),
            "a string stays a string"
        );
        assert_eq!(one("s=true").unwrap(), json!("true"));
        assert_eq!(one("obj={\"k\":[1]}").unwrap(), json!({"k": [1]}));
        assert_eq!(one("list=[1,\"a\"]").unwrap(), json!([1, "a"]));
        assert_eq!(one("maybe=5").unwrap(), json!(5));
        assert_eq!(one("maybe=five").unwrap(), json!("five"));
        assert_eq!(one("nullable=null").unwrap(), Value::Null);
        assert_eq!(one("choice=12").unwrap(), json!("12"));
        assert_eq!(one("union=false").unwrap(), json!(false));
        assert_eq!(one("free=12").unwrap(), json!(12));
        assert_eq!(one("free=hello").unwrap(), json!("hello"));
        assert_eq!(one("undeclared=[1]").unwrap(), json!([1]));
        assert_eq!(one("s=a=b").unwrap(), json!("a=b"), "split at the first =");
        assert_eq!(one("s=").unwrap(), json!(""));
        // JSON Schema 2020-12: a number with a zero fractional part is an integer.
        assert_eq!(one("n=3.0").unwrap(), json!(3));
        assert_eq!(one("n=1e3").unwrap(), json!(1000));
        assert_eq!(one("n=-0.0").unwrap(), json!(0));
    }

    #[test]
    fn values_that_do_not_fit_are_refused_with_the_key() {
        for (pair, expected) in [
            ("n=4.5", "expected integer"),
            ("n=18446744073709551616", "expected integer"),
            ("n=4503599627370496.5", "expected integer"),
            ("n=1e300", "expected integer"),
            ("n=1234e-2", "expected integer"),
            ("n=0.5e0", "expected integer"),
            ("n=3.", "expected integer"),
            ("n=abc", "expected integer"),
            ("x=NaN", "expected number"),
            ("flag=yes", "expected boolean"),
            ("obj=[1]", "expected object"),
            ("list={}", "expected array"),
            ("nullable=x", "expected integer or null"),
            ("union=1", "expected boolean or object"),
        ] {
            let e = one(pair).unwrap_err();
            assert!(e.contains(expected), "{pair}: {e}");
            let key = pair.split('=').next().unwrap();
            assert!(e.contains(&format!("--arg {key}=")), "{pair}: {e}");
        }
        assert!(one("noequals").unwrap_err().contains("KEY=VALUE"));
        assert!(one("=v").unwrap_err().contains("KEY=VALUE"));
    }

    #[test]
    fn arg_overrides_keys_of_args() {
        let pairs = vec!["n=2".to_owned(), "s=new".to_owned(), "n=3".to_owned()];
        let args = ArgsJson::inline(r#"{"n": 1, "keep": true}"#);
        let m = tool_arguments(&schema(), Some(&args), &pairs).unwrap();
        assert_eq!(Value::Object(m), json!({"n": 3, "keep": true, "s": "new"}));
    }

    #[test]
    fn args_come_inline_from_a_file_or_from_stdin() {
        assert_eq!(args_source("-"), ArgsSource::Stdin);
        assert_eq!(
            args_source("@dir/big args.json"),
            ArgsSource::File("dir/big args.json".into())
        );
        assert_eq!(
            args_source(r#"{"a": 1}"#),
            ArgsSource::Inline(r#"{"a": 1}"#.to_owned())
        );
    }

    #[test]
    fn bad_args_json_is_named_with_its_origin_and_position() {
        let from = |origin: &str, text: &str| ArgsJson {
            origin: origin.to_owned(),
            text: text.to_owned(),
        };
        let e = |j: ArgsJson| tool_arguments(&schema(), Some(&j), &[]).unwrap_err();
        assert_eq!(
            e(ArgsJson::inline("[1]")),
            "--args: expected a JSON object, not an array"
        );
        assert_eq!(
            e(from("--args @a.json", "\"x\"")),
            "--args @a.json: expected a JSON object, not a string"
        );
        assert_eq!(
            e(from("--args @a.json", "{\n  \"a\": 1,\n}\n")),
            "--args @a.json: not JSON at line 3, column 1: trailing comma"
        );
        assert_eq!(
            e(ArgsJson::inline("{")),
            "--args: not JSON at line 1, column 1: EOF while parsing an object"
        );
        assert_eq!(
            e(from("--args - (stdin)", " \n")),
            "--args - (stdin): empty; expected a JSON object"
        );
        let e = prompt_arguments(Some(&from("--args @p.json", "1")), &[]).unwrap_err();
        assert_eq!(e, "--args @p.json: expected a JSON object, not a number");
    }

    fn check(schema: Value, arguments: Value) -> Checked {
        check_arguments(
            "t",
            schema.as_object().expect("a schema object"),
            arguments.as_object().expect("an arguments object"),
        )
    }

    #[test]
    fn an_undeclared_argument_is_warned_of_or_refused_as_the_schema_says() {
        let open = json!({"type": "object", "properties": {"a": {}, "b": {}}});
        assert_eq!(
            check(open.clone(), json!({"a": 1, "b": 2})),
            Checked::default()
        );
        assert_eq!(
            check(open.clone(), json!({"a": 1, "foo": 2})),
            Checked {
                warnings: vec![r#"tool "t" has no argument "foo" (its arguments: a, b)"#.into()],
                refusal: None
            }
        );
        assert_eq!(
            check(open, json!({"x": 1, "y": 2})).warnings,
            [r#"tool "t" has no arguments "x", "y" (its arguments: a, b)"#]
        );
        let closed = json!({"type": "object", "properties": {"a": {}, "b": {}},
            "additionalProperties": false});
        assert_eq!(
            check(closed.clone(), json!({"a": 1, "foo": 2})),
            Checked {
                warnings: vec![],
                refusal: Some(
                    r#"tool "t" has no argument "foo" (its arguments: a, b; its inputSchema allows no others): not sent"#
                        .into()
                )
            }
        );
        assert_eq!(check(closed, json!({"b": 1})), Checked::default());
        // No properties at all, and closed: it takes none.
        let none = json!({"type": "object", "additionalProperties": false});
        assert_eq!(
            check(none, json!({"q": 1})).refusal.unwrap(),
            r#"tool "t" has no argument "q" (it takes no arguments; its inputSchema allows no others): not sent"#
        );
        let empty = json!({"type": "object", "properties": {}});
        assert_eq!(
            check(empty, json!({"q": 1})).warnings,
            [r#"tool "t" has no argument "q" (it takes no arguments)"#]
        );
    }

    #[test]
    fn what_the_schema_may_allow_is_left_to_the_server() {
        for schema in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
            json!({"type": "object", "properties": {"a": {}},
                "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "properties": {"a": {}},
                "patternProperties": {"^x": {}}}),
            json!({"type": "object", "properties": {"a": {}},
                "patternProperties": {"^x": {}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"a": {}}, "$ref": "#/$defs/more"}),
        ] {
            assert_eq!(
                check(schema.clone(), json!({"a": 1, "xyz": 2})),
                Checked::default(),
                "{schema}"
            );
        }
        // A member of allOf declares it.
        let composed = json!({"type": "object", "properties": {"a": {}},
            "allOf": [{"properties": {"xyz": {}}}]});
        assert_eq!(
            check(composed, json!({"a": 1, "xyz": 2})),
            Checked::default()
        );
    }

    #[test]
    fn a_missing_required_argument_is_refused_naming_it() {
        let schema = json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
            "required": ["a", "b"]});
        assert_eq!(
            check(schema.clone(), json!({"a": 1, "b": null})),
            Checked::default()
        );
        assert_eq!(
            check(schema.clone(), json!({"a": 1})).refusal.unwrap(),
            r#"tool "t" needs the argument "b" (its required arguments: a, b): not sent"#
        );
        assert_eq!(
            check(schema, json!({"c": 1})).refusal.unwrap(),
            r#"tool "t" needs the arguments "a", "b" (its required arguments: a, b): not sent"#
        );
        // Both at once, in one line.
        let closed = json!({"type": "object", "properties": {"a": {}},
            "required": ["a"], "additionalProperties": false});
        assert_eq!(
            check(closed, json!({"z": 1})).refusal.unwrap(),
            r#"tool "t" has no argument "z" (its arguments: a; its inputSchema allows no others); tool "t" needs the argument "a" (its required arguments: a): not sent"#
        );
    }

    #[test]
    fn prompt_arguments_are_strings() {
        let pairs = vec!["name=Ada".to_owned(), "n=1".to_owned()];
        let args = ArgsJson::inline(r#"{"style": "formal", "name": "x"}"#);
        let m = prompt_arguments(Some(&args), &pairs).unwrap();
        assert_eq!(m["name"], "Ada");
        assert_eq!(m["n"], "1");
        assert_eq!(m["style"], "formal");
        assert!(
            prompt_arguments(Some(&ArgsJson::inline(r#"{"n": 1}"#)), &[])
                .unwrap_err()
                .contains("must be a string")
        );
    }
}
