//! Elicitation: a server asks the user, through the client, for structured input
//! (form mode) or to visit a URL (URL mode).
//!
//! Sources: "Client features → Elicitation" of 2025-06-18 (form only, the request
//! params are `{message, requestedSchema}`), 2025-11-25 (adds `mode`, URL mode with
//! `elicitationId`, more enum shapes, defaults, `notifications/elicitation/complete`
//! and the -32042 error) and 2026-07-28 (elicitations travel inside a multi
//! round-trip `inputRequests` map; URL mode has no `elicitationId`; the
//! notification and -32042 are gone). Absent in 2024-11-05 and 2025-03-26.
//!
//! This module holds only the wire shapes; it must not know how a client renders a
//! form, opens a URL or validates what the user typed.

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::common::{Extra, Meta};
use super::tasks::TaskMetadata;

/// `elicitation/create` (server→client request in 2025-06-18 and 2025-11-25; an
/// `inputRequests` entry in 2026-07-28): params [`ElicitRequestParams`], result
/// [`ElicitResult`].
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// `notifications/elicitation/complete` (2025-11-25 only, server→client): a URL-mode
/// elicitation finished out of band; params [`ElicitationCompleteNotificationParams`].
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

const_tag!(
    /// The constant `"form"` of `ElicitRequestFormParams.mode` (2025-11-25+).
    FormMode = "form"
);
const_tag!(
    /// The constant `"url"` of `ElicitRequestURLParams.mode` (2025-11-25+).
    UrlMode = "url"
);
const_tag!(
    /// The constant `"object"` of `requestedSchema.type` (2025-06-18+).
    ObjectType = "object"
);
const_tag!(
    /// The constant `"string"` of string and single-select enum schemas (2025-06-18+).
    StringType = "string"
);
const_tag!(
    /// The constant `"boolean"` of [`BooleanSchema`] (2025-06-18+).
    BooleanType = "boolean"
);
const_tag!(
    /// The constant `"array"` of multi-select enum schemas (2025-11-25+).
    ArrayType = "array"
);

/// Serde helpers for a JSON object kept as an ordered list of `(key, value)` pairs,
/// so that e.g. the order of form fields survives decoding.
pub(crate) mod ordered_map {
    use serde::de::{DeserializeOwned, Deserializer, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};
    use serde::Serialize;
    use std::fmt;
    use std::marker::PhantomData;

    pub(crate) fn serialize<S: Serializer, V: Serialize>(
        pairs: &[(String, V)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(pairs.len()))?;
        for (k, v) in pairs {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>, V: DeserializeOwned>(
        d: D,
    ) -> Result<Vec<(String, V)>, D::Error> {
        struct Pairs<V>(PhantomData<V>);
        impl<'de, V: DeserializeOwned> Visitor<'de> for Pairs<V> {
            type Value = Vec<(String, V)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0));
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs(PhantomData))
    }
}

/// The params of `elicitation/create`: form mode or URL mode (schema
/// `ElicitRequestParams` = `ElicitRequestFormParams` | `ElicitRequestURLParams`,
/// 2025-11-25+; in 2025-06-18 always the form shape without `mode`).
///
/// Decoding looks at `mode`: absent or `"form"` → [`ElicitRequestParams::Form`],
/// `"url"` → [`ElicitRequestParams::Url`], any other string →
/// [`ElicitRequestParams::Other`] (a newer mode, kept as sent). A known mode with
/// bad members is an error.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode: collect values for a flat schema of primitive fields.
    Form(ElicitRequestFormParams),
    /// URL mode: send the user to a URL (2025-11-25+).
    Url(ElicitRequestURLParams),
    /// A mode this crate does not know, with all its members.
    Other(Map<String, Value>),
}

impl ElicitRequestParams {
    /// The human-readable message, whatever the mode (for `Other`, when it is a
    /// string).
    pub fn message(&self) -> Option<&str> {
        match self {
            ElicitRequestParams::Form(p) => Some(&p.message),
            ElicitRequestParams::Url(p) => Some(&p.message),
            ElicitRequestParams::Other(m) => m.get("message").and_then(Value::as_str),
        }
    }

    /// Whether this is a URL-mode elicitation.
    pub fn is_url(&self) -> bool {
        matches!(self, ElicitRequestParams::Url(_))
    }

    /// `_meta`, whatever the mode (`None` for `Other`).
    pub fn meta(&self) -> Option<&Meta> {
        match self {
            ElicitRequestParams::Form(p) => p.meta.as_ref(),
            ElicitRequestParams::Url(p) => p.meta.as_ref(),
            ElicitRequestParams::Other(_) => None,
        }
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(p) => p.serialize(s),
            ElicitRequestParams::Url(p) => p.serialize(s),
            ElicitRequestParams::Other(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::<String, Value>::deserialize(d)?;
        let mode = match m.get("mode") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(de::Error::custom("`mode` must be a string")),
        };
        match mode {
            None | Some(FormMode::VALUE) => from_map(m).map(ElicitRequestParams::Form),
            Some(UrlMode::VALUE) => from_map(m).map(ElicitRequestParams::Url),
            Some(_) => Ok(ElicitRequestParams::Other(m)),
        }
    }
}

fn from_map<T: DeserializeOwned, E: de::Error>(m: Map<String, Value>) -> Result<T, E> {
    serde_json::from_value(Value::Object(m)).map_err(E::custom)
}

/// Form-mode params: `{mode?: "form", message, requestedSchema, task?, _meta?}`
/// (schema `ElicitRequestFormParams`, 2025-11-25+; the 2025-06-18 params are this
/// shape without `mode` or `task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"` when sent explicitly (2025-11-25+); `None` means form by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// The message shown to the user.
    pub message: String,
    /// The fields to collect.
    pub requested_schema: ElicitRequestedSchema,
    /// Run the request as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta` (2025-06-18 and 2025-11-25 schemas; kept if sent later).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestFormParams {
    /// Form params with the given message and schema, no explicit `mode`.
    pub fn new(message: impl Into<String>, requested_schema: ElicitRequestedSchema) -> Self {
        ElicitRequestFormParams {
            mode: None,
            message: message.into(),
            requested_schema,
            task: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// URL-mode params: `{mode: "url", message, url, elicitationId?, task?, _meta?}`
/// (schema `ElicitRequestURLParams`, 2025-11-25+).
///
/// `elicitationId` is required in 2025-11-25 and absent from the 2026-07-28 schema
/// (where the `inputRequests` key identifies the elicitation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: UrlMode,
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// The elicitation's id (2025-11-25; not in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Run the request as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta` (2025-11-25 schema; kept if sent later).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestURLParams {
    /// URL params with a message and a URL, no `elicitationId` (2026-07-28 shape).
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams {
            mode: UrlMode,
            message: message.into(),
            url: url.into(),
            elicitation_id: None,
            task: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// `requestedSchema`: `{$schema?, type: "object", properties, required?}`, a flat
/// object of primitive fields (2025-06-18+; `$schema` from 2025-11-25). The schema
/// gives this shape no name of its own. Property order is kept as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestedSchema {
    /// The JSON Schema dialect URI (2025-11-25+).
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub schema_type: ObjectType,
    /// The fields, in order: name → primitive schema.
    #[serde(with = "ordered_map")]
    pub properties: Vec<(String, PrimitiveSchemaDefinition)>,
    /// Names of the required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestedSchema {
    /// The schema of the field `name`, if any.
    pub fn property(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

/// The schema of one form field (schema `PrimitiveSchemaDefinition`, 2025-06-18+):
/// a string, a number, a boolean or an enum.
///
/// Decoding looks at `type` and the enum keywords: `"string"` with `enum` or `oneOf`
/// → [`PrimitiveSchemaDefinition::Enum`], other `"string"` →
/// [`PrimitiveSchemaDefinition::String`], `"number"`/`"integer"` →
/// [`PrimitiveSchemaDefinition::Number`], `"boolean"` →
/// [`PrimitiveSchemaDefinition::Boolean`], `"array"` with `items.enum` or
/// `items.anyOf` → a multi-select [`PrimitiveSchemaDefinition::Enum`]; anything else is
/// kept as [`PrimitiveSchemaDefinition::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// A free-text field.
    String(StringSchema),
    /// A number or integer field.
    Number(NumberSchema),
    /// A boolean field.
    Boolean(BooleanSchema),
    /// A single- or multi-select enum field.
    Enum(EnumSchema),
    /// A field schema this crate does not recognise, kept as sent.
    Other(Map<String, Value>),
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PrimitiveSchemaDefinition::String(x) => x.serialize(s),
            PrimitiveSchemaDefinition::Number(x) => x.serialize(s),
            PrimitiveSchemaDefinition::Boolean(x) => x.serialize(s),
            PrimitiveSchemaDefinition::Enum(x) => x.serialize(s),
            PrimitiveSchemaDefinition::Other(x) => x.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::<String, Value>::deserialize(d)?;
        let ty = m.get("type").and_then(Value::as_str);
        let items = m.get("items").and_then(Value::as_object);
        let is_enum = match ty {
            Some("string") => m.contains_key("enum") || m.contains_key("oneOf"),
            Some("array") => {
                items.is_some_and(|i| i.contains_key("enum") || i.contains_key("anyOf"))
            }
            _ => false,
        };
        if is_enum {
            return from_map(m).map(PrimitiveSchemaDefinition::Enum);
        }
        match ty {
            Some("string") => from_map(m).map(PrimitiveSchemaDefinition::String),
            Some("number" | "integer") => from_map(m).map(PrimitiveSchemaDefinition::Number),
            Some("boolean") => from_map(m).map(PrimitiveSchemaDefinition::Boolean),
            _ => Ok(PrimitiveSchemaDefinition::Other(m)),
        }
    }
}

/// A string field: `{type: "string", title?, description?, minLength?, maxLength?,
/// format?, default?}` (schema `StringSchema`, 2025-06-18+; `default` from
/// 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub schema_type: StringType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<i64>,
    /// Maximum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    /// Format: `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `StringSchema.format` (2025-06-18+). An unknown format is kept as
/// [`StringFormat::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// An e-mail address.
    Email,
    /// A URI.
    Uri,
    /// A date (`YYYY-MM-DD`).
    Date,
    /// A date and time (RFC 3339).
    DateTime,
    /// Any other format, as sent.
    #[serde(untagged)]
    Other(String),
}

/// `NumberSchema.type`: `"number"` or `"integer"` (2025-06-18+).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// An integer.
    Integer,
}

/// A number field: `{type: "number"|"integer", title?, description?, minimum?,
/// maximum?, default?}` (schema `NumberSchema`, 2025-06-18+; `default` from
/// 2025-11-25). Numbers are kept as JSON numbers, so `1` stays `1`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub schema_type: NumberType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Inclusive minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Inclusive maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Default value (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A boolean field: `{type: "boolean", title?, description?, default?}` (schema
/// `BooleanSchema`, 2025-06-18+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub schema_type: BooleanType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An enum field (schema `EnumSchema`). In 2025-06-18 it is a single shape
/// `{type: "string", enum, enumNames?}` (decoded as
/// [`EnumSchema::UntitledSingleSelect`] or, with `enumNames`,
/// [`EnumSchema::LegacyTitled`]); 2025-11-25 makes it a union of five shapes.
///
/// Decoding: `"array"` with `items.anyOf` → titled multi-select, with `items.enum`
/// → untitled multi-select; `"string"` with `oneOf` → titled single-select, with
/// `enumNames` → legacy titled, with `enum` → untitled single-select.
#[derive(Debug, Clone, PartialEq)]
pub enum EnumSchema {
    /// `{type: "string", enum}`.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// `{type: "string", oneOf: [{const, title}]}`.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// `{type: "array", items: {type: "string", enum}}`.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// `{type: "array", items: {anyOf: [{const, title}]}}`.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// `{type: "string", enum, enumNames}` (deprecated in 2025-11-25).
    LegacyTitled(LegacyTitledEnumSchema),
}

impl EnumSchema {
    /// Whether the user may pick several values.
    pub fn is_multi_select(&self) -> bool {
        matches!(
            self,
            EnumSchema::UntitledMultiSelect(_) | EnumSchema::TitledMultiSelect(_)
        )
    }

    /// The allowed values, in order.
    pub fn values(&self) -> Vec<&str> {
        match self {
            EnumSchema::UntitledSingleSelect(s) => s.values.iter().map(String::as_str).collect(),
            EnumSchema::LegacyTitled(s) => s.values.iter().map(String::as_str).collect(),
            EnumSchema::UntitledMultiSelect(s) => {
                s.items.values.iter().map(String::as_str).collect()
            }
            EnumSchema::TitledSingleSelect(s) => {
                s.one_of.iter().map(|o| o.value.as_str()).collect()
            }
            EnumSchema::TitledMultiSelect(s) => {
                s.items.any_of.iter().map(|o| o.value.as_str()).collect()
            }
        }
    }
}

impl Serialize for EnumSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EnumSchema::UntitledSingleSelect(x) => x.serialize(s),
            EnumSchema::TitledSingleSelect(x) => x.serialize(s),
            EnumSchema::UntitledMultiSelect(x) => x.serialize(s),
            EnumSchema::TitledMultiSelect(x) => x.serialize(s),
            EnumSchema::LegacyTitled(x) => x.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for EnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::<String, Value>::deserialize(d)?;
        match m.get("type").and_then(Value::as_str) {
            Some("array") => {
                let titled = m
                    .get("items")
                    .and_then(Value::as_object)
                    .is_some_and(|i| i.contains_key("anyOf"));
                if titled {
                    from_map(m).map(EnumSchema::TitledMultiSelect)
                } else {
                    from_map(m).map(EnumSchema::UntitledMultiSelect)
                }
            }
            Some("string") => {
                if m.contains_key("oneOf") {
                    from_map(m).map(EnumSchema::TitledSingleSelect)
                } else if m.contains_key("enumNames") {
                    from_map(m).map(EnumSchema::LegacyTitled)
                } else {
                    from_map(m).map(EnumSchema::UntitledSingleSelect)
                }
            }
            _ => Err(de::Error::custom(
                "an enum schema has `type` \"string\" or \"array\"",
            )),
        }
    }
}

/// One titled option: `{const, title}` (2025-11-25+, inside `oneOf` and
/// `items.anyOf`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value (`const`).
    #[serde(rename = "const")]
    pub value: String,
    /// Its display name.
    pub title: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A single-select enum without titles: `{type: "string", title?, description?,
/// enum, default?}` (schema `UntitledSingleSelectEnumSchema`, 2025-11-25+; also the
/// 2025-06-18 `EnumSchema` without `enumNames`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub schema_type: StringType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values (`enum`).
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Default value (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A single-select enum with titles: `{type: "string", title?, description?,
/// oneOf: [{const, title}], default?}` (schema `TitledSingleSelectEnumSchema`,
/// 2025-11-25+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub schema_type: StringType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<EnumOption>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of [`UntitledMultiSelectEnumSchema`]: `{type: "string", enum}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledMultiSelectItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub schema_type: StringType,
    /// The allowed values (`enum`).
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A multi-select enum without titles: `{type: "array", title?, description?,
/// minItems?, maxItems?, items: {type: "string", enum}, default?}` (schema
/// `UntitledMultiSelectEnumSchema`, 2025-11-25+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub schema_type: ArrayType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<i64>,
    /// Maximum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<i64>,
    /// The item schema.
    pub items: UntitledMultiSelectItems,
    /// Default selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of [`TitledMultiSelectEnumSchema`]: `{anyOf: [{const, title}]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectItems {
    /// The options.
    pub any_of: Vec<EnumOption>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A multi-select enum with titles: `{type: "array", title?, description?,
/// minItems?, maxItems?, items: {anyOf: [{const, title}]}, default?}` (schema
/// `TitledMultiSelectEnumSchema`, 2025-11-25+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub schema_type: ArrayType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<i64>,
    /// Maximum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<i64>,
    /// The item schema.
    pub items: TitledMultiSelectItems,
    /// Default selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The pre-2025-11-25 titled enum: `{type: "string", title?, description?, enum,
/// enumNames?, default?}` (schema `LegacyTitledEnumSchema`, 2025-11-25+, deprecated;
/// the 2025-06-18 `EnumSchema` with `enumNames`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub schema_type: StringType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values (`enum`).
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Display names, parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The user's choice (`ElicitResult.action`, 2025-06-18+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form (or consented, in URL mode).
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed without choosing.
    Cancel,
}

/// One submitted form value: a string, a number, a boolean, or (2025-11-25+, for
/// multi-select enums) an array of strings (`ElicitResult.content` values).
/// Numbers are kept as JSON numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number (the schema allows integers; any JSON number is kept).
    Number(Number),
    /// A boolean.
    Boolean(bool),
    /// The selected values of a multi-select enum (2025-11-25+).
    StringArray(Vec<String>),
}

/// The client's answer to `elicitation/create`: `{action, content?, _meta?}`
/// (schema `ElicitResult`, 2025-06-18+). `content` is present only with
/// `accept` in form mode; property order is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values: field name → value.
    #[serde(
        default,
        with = "opt_ordered_map",
        skip_serializing_if = "Option::is_none"
    )]
    pub content: Option<Vec<(String, ElicitValue)>>,
    /// `_meta` (not in the 2026-07-28 schema; kept if sent).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitResult {
    /// A result with `action` and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The submitted value of field `name`, if any.
    pub fn value(&self, name: &str) -> Option<&ElicitValue> {
        self.content
            .as_ref()?
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

mod opt_ordered_map {
    use serde::de::{DeserializeOwned, Deserializer};
    use serde::ser::Serializer;
    use serde::Serialize;

    pub(super) fn serialize<S: Serializer, V: Serialize>(
        pairs: &Option<Vec<(String, V)>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match pairs {
            Some(p) => super::ordered_map::serialize(p, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>, V: DeserializeOwned>(
        d: D,
    ) -> Result<Option<Vec<(String, V)>>, D::Error> {
        super::ordered_map::deserialize(d).map(Some)
    }
}

/// Params of `notifications/elicitation/complete`: `{elicitationId, _meta?}`
/// (2025-11-25, schema `ElicitationCompleteNotification.params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The URL-mode elicitation that completed.
    pub elicitation_id: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn form_2025_06_18_without_mode() {
        let p: ElicitRequestParams = round_trip(json!({
            "message": "Please provide your GitHub username",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }
        }));
        let ElicitRequestParams::Form(f) = &p else {
            panic!("expected form, got {p:?}")
        };
        assert_eq!(f.mode, None);
        assert!(!p.is_url());
        assert!(matches!(
            f.requested_schema.property("name"),
            Some(PrimitiveSchemaDefinition::String(_))
        ));
    }

    #[test]
    fn form_2025_11_25_with_mode_task_and_schema_dialect() {
        let p: ElicitRequestParams = round_trip(json!({
            "mode": "form",
            "message": "Details",
            "requestedSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "email": {"type": "string", "format": "email", "default": "a@b.c"},
                    "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                    "ratio": {"type": "number", "minimum": 0.5},
                    "ok": {"type": "boolean", "default": true, "title": "OK?"}
                }
            },
            "task": {"ttl": 60000},
            "_meta": {"progressToken": 1}
        }));
        let ElicitRequestParams::Form(f) = p else {
            panic!("expected form")
        };
        assert_eq!(f.mode, Some(FormMode));
        assert_eq!(f.task.as_ref().and_then(|t| t.ttl), Some(60000));
        let names: Vec<&str> = f
            .requested_schema
            .properties
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(names, ["email", "age", "ratio", "ok"], "order kept");
        let Some(PrimitiveSchemaDefinition::Number(n)) = f.requested_schema.property("age") else {
            panic!("age is a number")
        };
        assert_eq!(n.schema_type, NumberType::Integer);
        assert_eq!(n.maximum.as_ref().and_then(Number::as_i64), Some(150));
        let Some(PrimitiveSchemaDefinition::String(s)) = f.requested_schema.property("email")
        else {
            panic!("email is a string")
        };
        assert_eq!(s.format, Some(StringFormat::Email));
    }

    #[test]
    fn url_mode_2025_11_25_and_2026_07_28() {
        let v = json!({
            "mode": "url",
            "message": "Please authorize",
            "url": "https://example.com/oauth",
            "elicitationId": "e-1"
        });
        let p: ElicitRequestParams = round_trip(v);
        let ElicitRequestParams::Url(u) = &p else {
            panic!("expected url")
        };
        assert_eq!(u.elicitation_id.as_deref(), Some("e-1"));
        assert!(p.is_url());
        assert_eq!(p.message(), Some("Please authorize"));
        // 2026-07-28: no elicitationId.
        let p: ElicitRequestParams = round_trip(json!({
            "mode": "url", "message": "m", "url": "https://x.example/"
        }));
        let ElicitRequestParams::Url(u) = p else {
            panic!("expected url")
        };
        assert_eq!(u.elicitation_id, None);
        assert_eq!(
            serde_json::to_value(ElicitRequestURLParams::new("m", "https://x.example/")).unwrap(),
            json!({"mode": "url", "message": "m", "url": "https://x.example/"})
        );
    }

    #[test]
    fn url_and_form_are_not_confused() {
        // A URL-mode request lacking its url is an error, not a form.
        assert!(serde_json::from_value::<ElicitRequestParams>(
            json!({"mode": "url", "message": "m"})
        )
        .is_err());
        // A form without requestedSchema is an error.
        assert!(serde_json::from_value::<ElicitRequestParams>(json!({"message": "m"})).is_err());
        // A form with a url member stays a form (url kept as extra).
        let p: ElicitRequestParams = round_trip(json!({
            "message": "m", "url": "https://x",
            "requestedSchema": {"type": "object", "properties": {}}
        }));
        let ElicitRequestParams::Form(f) = p else {
            panic!("expected form")
        };
        assert_eq!(f.extra["url"], json!("https://x"));
        // URL params struct refuses mode "form".
        assert!(serde_json::from_value::<ElicitRequestURLParams>(
            json!({"mode": "form", "message": "m", "url": "u"})
        )
        .is_err());
        // Unknown mode kept whole.
        let p: ElicitRequestParams = round_trip(json!({"mode": "voice", "message": "m"}));
        assert!(matches!(p, ElicitRequestParams::Other(_)));
        assert_eq!(p.message(), Some("m"));
    }

    #[test]
    fn enum_schema_variants() {
        let cases = [
            (
                json!({"type": "string", "enum": ["a", "b"], "default": "a"}),
                "untitled-single",
            ),
            (
                json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}], "title": "T"}),
                "titled-single",
            ),
            (
                json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]},
                       "minItems": 1, "maxItems": 2, "default": ["a"]}),
                "untitled-multi",
            ),
            (
                json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}),
                "titled-multi",
            ),
            (
                json!({"type": "string", "enum": ["a"], "enumNames": ["A"], "description": "d"}),
                "legacy",
            ),
        ];
        for (v, want) in cases {
            let d: PrimitiveSchemaDefinition = round_trip(v.clone());
            let PrimitiveSchemaDefinition::Enum(e) = d else {
                panic!("{v} is an enum")
            };
            let got = match &e {
                EnumSchema::UntitledSingleSelect(_) => "untitled-single",
                EnumSchema::TitledSingleSelect(_) => "titled-single",
                EnumSchema::UntitledMultiSelect(_) => "untitled-multi",
                EnumSchema::TitledMultiSelect(_) => "titled-multi",
                EnumSchema::LegacyTitled(_) => "legacy",
            };
            assert_eq!(got, want, "{v}");
            assert_eq!(e.is_multi_select(), want.ends_with("multi"));
            assert_eq!(e.values()[0], "a");
            let direct: EnumSchema = round_trip(v);
            assert_eq!(direct, e);
        }
    }

    #[test]
    fn unknown_primitive_schema_kept() {
        let v = json!({"type": "object", "properties": {}});
        let d: PrimitiveSchemaDefinition = round_trip(v.clone());
        assert_eq!(
            d,
            PrimitiveSchemaDefinition::Other(v.as_object().unwrap().clone())
        );
        let v = json!({"type": "string", "format": "ipv4", "x-ui": {"w": 3}});
        let d: PrimitiveSchemaDefinition = round_trip(v);
        let PrimitiveSchemaDefinition::String(s) = d else {
            panic!("string")
        };
        assert_eq!(s.format, Some(StringFormat::Other("ipv4".into())));
        assert_eq!(s.extra["x-ui"], json!({"w": 3}));
        assert!(serde_json::from_value::<BooleanSchema>(json!({"type": "string"})).is_err());
    }

    #[test]
    fn elicit_results() {
        let r: ElicitResult = round_trip(json!({
            "action": "accept",
            "content": {"name": "octocat", "age": 30, "ok": false, "tags": ["a", "b"], "r": 0.5}
        }));
        assert_eq!(r.action, ElicitAction::Accept);
        assert_eq!(
            r.value("name"),
            Some(&ElicitValue::String("octocat".into()))
        );
        assert_eq!(r.value("ok"), Some(&ElicitValue::Boolean(false)));
        assert_eq!(
            r.value("tags"),
            Some(&ElicitValue::StringArray(vec!["a".into(), "b".into()]))
        );
        assert!(matches!(r.value("age"), Some(ElicitValue::Number(n)) if n.as_i64() == Some(30)));
        let r: ElicitResult = round_trip(json!({"action": "decline", "_meta": {}, "z": 1}));
        assert_eq!(r.content, None);
        assert_eq!(r.extra["z"], json!(1));
        let r: ElicitResult = round_trip(json!({"action": "cancel"}));
        assert_eq!(r, ElicitResult::new(ElicitAction::Cancel));
        assert!(serde_json::from_value::<ElicitResult>(json!({"action": "maybe"})).is_err());
        assert!(serde_json::from_value::<ElicitResult>(
            json!({"action": "accept", "content": {"x": {"nested": 1}}})
        )
        .is_err());
    }

    #[test]
    fn completion_notification() {
        let n: ElicitationCompleteNotificationParams =
            round_trip(json!({"elicitationId": "e-1", "_meta": {"a": 1}}));
        assert_eq!(n.elicitation_id, "e-1");
        assert!(
            serde_json::from_value::<ElicitationCompleteNotificationParams>(json!({})).is_err()
        );
    }
}
