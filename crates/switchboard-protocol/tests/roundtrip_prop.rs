//! Property tests: `decode(encode(m)) == m` for generated JSON-RPC messages, and
//! JSON-exact round trips of a few typed MCP messages built from generated values.
//!
//! Ids cover random strings (any Unicode, quotes, backslashes, control characters),
//! random `i64`s and integer literals far beyond 2^64; params, results and error
//! data are random JSON.

use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Number, Value};
use switchboard_protocol::jsonrpc::{
    decode_frame, encode_batch, Batching, ErrorObject, ErrorResponse, Frame, Id, IntId, Message,
    Notification, Request, Response,
};
use switchboard_protocol::types::{CallToolResult, InitializeRequestParams, Tool};

/// Strings with the characters JSON must escape, mixed with arbitrary Unicode.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\"\\\\/\u{0}-\u{1f}\u{7f}\u{2028}\u{2029}\u{fffd}é🦀a-z]{0,12}",
    ]
}

/// An integer literal with 20 to 60 digits: beyond `u64`, kept as text.
fn big_int_literal() -> impl Strategy<Value = String> {
    ("-?", "[1-9][0-9]{19,59}").prop_map(|(sign, digits)| format!("{sign}{digits}"))
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        tricky_string().prop_map(Id::from),
        any::<i64>().prop_map(Id::from),
        any::<u64>().prop_map(Id::from),
        big_int_literal().prop_map(|t| Id::Int(IntId::parse(&t).expect("an integer literal"))),
        Just(Id::Int(
            IntId::parse("-0").expect("-0 is an integer literal")
        )),
    ]
}

/// Method names as every MCP revision has them: no JSON escapes (the envelope
/// refuses escaped methods), otherwise any characters, Unicode included.
fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,10}(/[a-zA-Z_]{1,12}){0,2}",
        "[^\"\\\\\u{0}-\u{1f}]{0,16}",
    ]
}

/// Any JSON value; numbers are integers of any size serde_json keeps exactly, and
/// finite floats.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((tricky_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((tricky_string(), json_value()), 0..6)
        .prop_map(|kv| kv.into_iter().collect())
}

/// `params`: mostly objects, sometimes arrays (JSON-RPC allows both), sometimes absent.
fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        3 => json_object().prop_map(|o| Some(Value::Object(o))),
        1 => prop::collection::vec(json_value(), 0..4).prop_map(|a| Some(Value::Array(a))),
        1 => Just(None),
    ]
}

fn raw(v: &Value) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(v).expect("a Value always serializes")
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), method(), params()).prop_map(|(id, method, p)| Message::Request(Request {
            id,
            method,
            params: p.as_ref().map(raw),
        })),
        (method(), params()).prop_map(|(method, p)| Message::Notification(Notification {
            method,
            params: p.as_ref().map(raw),
        })),
        (id(), json_value()).prop_map(|(id, result)| Message::Response(Response {
            id,
            result: raw(&result),
        })),
        (
            prop::option::weighted(0.8, id()),
            any::<i64>(),
            tricky_string(),
            // `Some(null)` included: `"data": null` must come back as written.
            prop::option::of(json_value()),
        )
            .prop_map(|(id, code, message, data)| {
                let mut error = ErrorObject::new(code, message);
                error.data = data.as_ref().map(raw);
                Message::Error(ErrorResponse::new(id, error))
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Decoding an encoded message gives the same message, and encoding again gives
    /// the same bytes.
    #[test]
    fn message_decode_encode(m in message()) {
        let bytes = m.encode();
        let back = Message::decode(&bytes)
            .map_err(|e| TestCaseError::fail(format!("{e} in {}", String::from_utf8_lossy(&bytes))))?;
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.encode(), bytes);
    }

    /// A message survives a parse into `serde_json::Value` and back (it is plain
    /// JSON). Integer ids beyond `u64`, and `-0`, are left out: a `Value` without
    /// `arbitrary_precision` turns them into floats.
    #[test]
    fn message_is_plain_json(m in message()) {
        let id = match &m {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        };
        prop_assume!(!matches!(id, Some(Id::Int(n))
            if n.as_str() == "-0" || (n.as_i64().is_none() && n.as_str().parse::<u64>().is_err())));
        let v: Value = serde_json::from_slice(&m.encode()).expect("encode gives JSON");
        let again = Message::decode(serde_json::to_string(&v).unwrap().as_bytes())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again, m);
    }

    /// A batch of messages (2025-03-26) decodes item by item to the same messages.
    #[test]
    fn batch_decode_encode(ms in prop::collection::vec(message(), 1..6)) {
        let bytes = encode_batch(&ms);
        let Frame::Batch(items) = decode_frame(&bytes, Batching::Allowed)
            .map_err(|e| TestCaseError::fail(e.to_string()))? else {
            return Err(TestCaseError::fail("a batch came back as a single message"));
        };
        let back: Vec<Message> = items
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, ms);
        prop_assert!(decode_frame(&bytes, Batching::Refused).is_err());
    }
}

// ---------------------------------------------------------------------------
// Typed messages
// ---------------------------------------------------------------------------

/// Decodes `v` as `T`, and checks `T` → JSON gives `v` back, and that decoding the
/// output gives an equal `T` again.
fn typed_round_trip<T>(v: &Value) -> Result<(), TestCaseError>
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(v).unwrap();
    let t: T = serde_json::from_str(&text)
        .map_err(|e| TestCaseError::fail(format!("decode: {e} in {text}")))?;
    let out = serde_json::to_string(&t).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let out_v: Value = serde_json::from_str(&out).unwrap();
    prop_assert_eq!(&out_v, v, "JSON changed in the round trip");
    let again: T = serde_json::from_str(&out)
        .map_err(|e| TestCaseError::fail(format!("re-decode: {e} in {out}")))?;
    prop_assert_eq!(again, t);
    Ok(())
}

/// Object keys that do not collide with modelled members (for `extra`).
fn extra_members() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec(("x-[a-z]{1,8}", json_value()), 0..3)
        .prop_map(|kv| kv.into_iter().collect())
}

/// A `_meta` object with a progress token and free keys.
fn meta() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        (
            prop::option::of(prop_oneof![
                any::<i64>().prop_map(|n| json!(n)),
                tricky_string().prop_map(Value::String)
            ]),
            json_object(),
        )
            .prop_map(|(token, mut m)| {
                m.remove("progressToken");
                if let Some(t) = token {
                    m.insert("progressToken".into(), t);
                }
                Value::Object(m)
            }),
    )
}

fn annotations() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        (
            prop::option::of(prop::collection::vec(
                prop_oneof![Just("user"), Just("assistant")],
                0..3,
            )),
            prop::option::of(0.0f64..=1.0),
        )
            .prop_map(|(audience, priority)| {
                let mut m = Map::new();
                if let Some(a) = audience {
                    m.insert("audience".into(), json!(a));
                }
                if let Some(p) = priority {
                    m.insert("priority".into(), json!(p));
                }
                Value::Object(m)
            }),
    )
}

fn insert_opt(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.into(), v);
    }
}

/// A content block of any kind of every revision, plus an unknown future kind.
fn content_block() -> impl Strategy<Value = Value> {
    let text = (tricky_string(), annotations(), extra_members()).prop_map(|(t, a, mut x)| {
        x.insert("type".into(), json!("text"));
        x.insert("text".into(), json!(t));
        insert_opt(&mut x, "annotations", a);
        Value::Object(x)
    });
    let image = (
        "[A-Za-z0-9+/]{0,16}",
        prop_oneof![Just("image/png"), Just("image/jpeg")],
        annotations(),
    )
        .prop_map(|(d, mime, a)| {
            let mut x = Map::new();
            x.insert("type".into(), json!("image"));
            x.insert("data".into(), json!(d));
            x.insert("mimeType".into(), json!(mime));
            insert_opt(&mut x, "annotations", a);
            Value::Object(x)
        });
    let audio =
        "[A-Za-z0-9+/]{0,16}".prop_map(|d| json!({"type":"audio","data":d,"mimeType":"audio/wav"}));
    let resource = (
        tricky_string(),
        prop::option::of("[a-z]+/[a-z]+"),
        any::<bool>(),
    )
        .prop_map(|(body, mime, blob)| {
            let mut r = Map::new();
            r.insert("uri".into(), json!("file:///a/b.txt"));
            insert_opt(&mut r, "mimeType", mime.map(Value::String));
            if blob {
                r.insert("blob".into(), json!("aGk="));
            } else {
                r.insert("text".into(), json!(body));
            }
            json!({"type":"resource","resource":r})
        });
    let link = (tricky_string(), prop::option::of(tricky_string())).prop_map(|(name, d)| {
        let mut x = Map::new();
        x.insert("type".into(), json!("resource_link"));
        x.insert("uri".into(), json!("https://example.com/r"));
        x.insert("name".into(), json!(name));
        insert_opt(&mut x, "description", d.map(Value::String));
        Value::Object(x)
    });
    let future = json_object().prop_map(|mut x| {
        x.insert("type".into(), json!("x-hologram"));
        Value::Object(x)
    });
    prop_oneof![4 => text, 1 => image, 1 => audio, 1 => resource, 1 => link, 1 => future]
}

fn call_tool_result() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(content_block(), 0..4),
        prop::option::of(json_object().prop_map(Value::Object)),
        prop::option::of(any::<bool>()),
        meta(),
        extra_members(),
    )
        .prop_map(|(content, structured, is_error, meta, mut x)| {
            x.insert("content".into(), Value::Array(content));
            insert_opt(&mut x, "structuredContent", structured);
            insert_opt(&mut x, "isError", is_error.map(Value::Bool));
            insert_opt(&mut x, "_meta", meta);
            Value::Object(x)
        })
}

/// A JSON Schema-ish object (`type: object` and free members).
fn object_schema() -> impl Strategy<Value = Value> {
    (
        json_object(),
        prop::option::of(prop::collection::vec("[a-z]{1,6}", 0..3)),
    )
        .prop_map(|(props, required)| {
            let mut s = Map::new();
            s.insert("type".into(), json!("object"));
            s.insert("properties".into(), Value::Object(props));
            insert_opt(&mut s, "required", required.map(|r| json!(r)));
            Value::Object(s)
        })
}

fn tool() -> impl Strategy<Value = Value> {
    (
        tricky_string(),
        prop::option::of(tricky_string()),
        prop::option::of(tricky_string()),
        object_schema(),
        prop::option::of(object_schema()),
        prop::option::of(
            (
                prop::option::of(any::<bool>()),
                prop::option::of(any::<bool>()),
                prop::option::of(tricky_string()),
            )
                .prop_map(|(ro, destructive, title)| {
                    let mut m = Map::new();
                    insert_opt(&mut m, "readOnlyHint", ro.map(Value::Bool));
                    insert_opt(&mut m, "destructiveHint", destructive.map(Value::Bool));
                    insert_opt(&mut m, "title", title.map(Value::String));
                    Value::Object(m)
                }),
        ),
        meta(),
        extra_members(),
    )
        .prop_map(
            |(name, title, description, input, output, annotations, meta, mut x)| {
                x.insert("name".into(), json!(name));
                insert_opt(&mut x, "title", title.map(Value::String));
                insert_opt(&mut x, "description", description.map(Value::String));
                x.insert("inputSchema".into(), input);
                insert_opt(&mut x, "outputSchema", output);
                insert_opt(&mut x, "annotations", annotations);
                insert_opt(&mut x, "_meta", meta);
                Value::Object(x)
            },
        )
}

fn initialize_params() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("2024-11-05".to_string()),
            Just("2025-03-26".to_string()),
            Just("2025-06-18".to_string()),
            Just("2025-11-25".to_string()),
            "20[0-9]{2}-[0-9]{2}-[0-9]{2}",
        ],
        (
            prop::option::of(any::<bool>()),
            any::<bool>(),
            any::<bool>(),
            json_object(),
        ),
        (
            tricky_string(),
            tricky_string(),
            prop::option::of(tricky_string()),
        ),
        meta(),
        extra_members(),
    )
        .prop_map(
            |(
                version,
                (roots, sampling, elicitation, experimental),
                (name, ver, title),
                meta,
                mut x,
            )| {
                let mut caps = Map::new();
                if let Some(list_changed) = roots {
                    caps.insert("roots".into(), json!({"listChanged": list_changed}));
                }
                if sampling {
                    caps.insert("sampling".into(), json!({}));
                }
                if elicitation {
                    caps.insert("elicitation".into(), json!({}));
                }
                if !experimental.is_empty() {
                    let exp: Map<String, Value> = experimental
                        .into_iter()
                        .map(|(k, _)| (k, json!({"enabled": true})))
                        .collect();
                    caps.insert("experimental".into(), Value::Object(exp));
                }
                let mut info = Map::new();
                info.insert("name".into(), json!(name));
                info.insert("version".into(), json!(ver));
                insert_opt(&mut info, "title", title.map(Value::String));
                x.insert("protocolVersion".into(), json!(version));
                x.insert("capabilities".into(), Value::Object(caps));
                x.insert("clientInfo".into(), Value::Object(info));
                insert_opt(&mut x, "_meta", meta);
                Value::Object(x)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn call_tool_result_round_trip(v in call_tool_result()) {
        typed_round_trip::<CallToolResult>(&v)?;
    }

    #[test]
    fn tool_round_trip(v in tool()) {
        typed_round_trip::<Tool>(&v)?;
    }

    #[test]
    fn initialize_request_params_round_trip(v in initialize_params()) {
        typed_round_trip::<InitializeRequestParams>(&v)?;
    }

    /// A typed result inside a response survives the envelope and the typed step.
    #[test]
    fn typed_result_inside_a_response(id in id(), v in call_tool_result()) {
        let m = Message::Response(Response { id, result: raw(&v) });
        let back = Message::decode(&m.encode()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let Message::Response(r) = back else {
            return Err(TestCaseError::fail("not a response"));
        };
        let typed: CallToolResult = r.result_as().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(serde_json::to_value(&typed).unwrap(), v);
    }
}
