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
//! `--args` gives the whole object; each `--arg` then sets (overrides) one key.
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

/// Parses `--args JSON`, which must be a JSON object.
fn parse_object(json: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("--args: expected a JSON object".to_owned()),
        Err(e) => Err(format!("--args: not JSON: {e}")),
    }
}

/// The `arguments` object of a `tools/call`: `--args` (if any), then each `--arg`
/// (in order; later ones win) parsed against `input_schema` (the tool's
/// `inputSchema` object). Errors: one line naming the bad argument.
pub fn tool_arguments(
    input_schema: &Map<String, Value>,
    args_json: Option<&str>,
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

/// The `arguments` of a `prompts/get` (a string map): `--args` (every value must be
/// a string), then each `--arg` as text. Errors: one line naming the bad argument.
pub fn prompt_arguments(
    args_json: Option<&str>,
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
                        "--args: prompt argument {k:?} must be a string, not {other}"
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
        let m = tool_arguments(&schema(), Some(r#"{"n": 1, "keep": true}"#), &pairs).unwrap();
        assert_eq!(Value::Object(m), json!({"n": 3, "keep": true, "s": "new"}));
        assert!(tool_arguments(&schema(), Some("[1]"), &[])
            .unwrap_err()
            .contains("JSON object"));
        assert!(tool_arguments(&schema(), Some("{"), &[])
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn prompt_arguments_are_strings() {
        let pairs = vec!["name=Ada".to_owned(), "n=1".to_owned()];
        let m = prompt_arguments(Some(r#"{"style": "formal", "name": "x"}"#), &pairs).unwrap();
        assert_eq!(m["name"], "Ada");
        assert_eq!(m["n"], "1");
        assert_eq!(m["style"], "formal");
        assert!(prompt_arguments(Some(r#"{"n": 1}"#), &[])
            .unwrap_err()
            .contains("must be a string"));
    }
}
