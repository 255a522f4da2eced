//! Content blocks: what tool results, prompt messages and sampling messages carry
//! (`text`, `image`, `audio`, `resource_link`, `resource`, and the sampling-only
//! `tool_use` / `tool_result`), and the contents of a resource (`text` or `blob`).
//!
//! Each block struct owns its `type` member through a one-value marker type (for
//! example [`TextType`]), so a block decoded on its own and re-encoded keeps its tag,
//! and a wrong tag is refused. The unions ([`ContentBlock`],
//! [`SamplingMessageContentBlock`]) dispatch on `type` and keep a block of a type
//! they do not know whole in an `Other` variant.
//!
//! This module only knows JSON shapes: it must not decode base64, fetch URIs or know
//! which revision allows which block (callers that translate between revisions do).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::common::{Annotations, Extra, Icon, Meta};

const_tag!(
    /// The `type` of a [`TextContent`]: always `"text"`.
    TextType = "text"
);
const_tag!(
    /// The `type` of an [`ImageContent`]: always `"image"`.
    ImageType = "image"
);
const_tag!(
    /// The `type` of an [`AudioContent`]: always `"audio"`.
    AudioType = "audio"
);
const_tag!(
    /// The `type` of a [`ResourceLink`]: always `"resource_link"`.
    ResourceLinkType = "resource_link"
);
const_tag!(
    /// The `type` of an [`EmbeddedResource`]: always `"resource"`.
    EmbeddedResourceType = "resource"
);
const_tag!(
    /// The `type` of a [`ToolUseContent`]: always `"tool_use"`.
    ToolUseType = "tool_use"
);
const_tag!(
    /// The `type` of a [`ToolResultContent`]: always `"tool_result"`.
    ToolResultType = "tool_result"
);

/// Deserializes a present member as `Some(value)`, so an explicit `null` is kept as
/// `Some(Value::Null)` rather than read as absent. Use with `#[serde(default)]`.
pub(crate) fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Text given to or by the model: `{type:"text", text, annotations?, _meta?}`.
///
/// Source: all revisions, "Content → Text Content"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: TextType,
    /// The text.
    pub text: String,
    /// Hints for the client (audience, priority, lastModified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TextContent {
    /// A text block with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Default::default()
        }
    }
}

/// An image: `{type:"image", data, mimeType, annotations?, _meta?}`.
///
/// `data` is base64 (not decoded here). Source: all revisions, "Content → Image
/// Content"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Always `"image"`.
    #[serde(rename = "type")]
    pub kind: ImageType,
    /// Base64-encoded image data.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Audio: `{type:"audio", data, mimeType, annotations?, _meta?}`.
///
/// `data` is base64 (not decoded here). Source: 2025-03-26+, "Content → Audio
/// Content"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Always `"audio"`.
    #[serde(rename = "type")]
    pub kind: AudioType,
    /// Base64-encoded audio data.
    pub data: String,
    /// MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A link to a resource the server can read, not its contents:
/// `{type:"resource_link", uri, name, title?, description?, mimeType?, size?,
/// annotations?, icons?, _meta?}`.
///
/// Source: 2025-06-18+, "Tools → Resource Links"; `icons` from 2025-11-25.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// Always `"resource_link"`.
    #[serde(rename = "type")]
    pub kind: ResourceLinkType,
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size of the raw content in bytes (before base64), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resource's contents inlined in a message:
/// `{type:"resource", resource: TextResourceContents | BlobResourceContents,
/// annotations?, _meta?}`.
///
/// Source: all revisions, "Content → Embedded Resources"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// Always `"resource"`.
    #[serde(rename = "type")]
    pub kind: EmbeddedResourceType,
    /// The contents.
    pub resource: ResourceContents,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Text contents of a resource: `{uri, mimeType?, text, _meta?}`.
///
/// Source: all revisions, "Resources → Resource Contents"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text (only for text resources).
    pub text: String,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Binary contents of a resource: `{uri, mimeType?, blob, _meta?}`; `blob` is base64.
///
/// Source: all revisions, "Resources → Resource Contents"; `_meta` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded binary data (not decoded here).
    pub blob: String,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The contents of one resource, text or binary (`EmbeddedResource.resource`,
/// `ReadResourceResult.contents[]`; all revisions).
///
/// Told apart by which member is present: `text` makes it [`Text`](Self::Text),
/// otherwise `blob` makes it [`Blob`](Self::Blob). An object with neither is an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// `{uri, mimeType?, text}`.
    Text(TextResourceContents),
    /// `{uri, mimeType?, blob}`.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if given.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        if map.contains_key("text") {
            serde_json::from_value(Value::Object(map))
                .map(ResourceContents::Text)
                .map_err(D::Error::custom)
        } else if map.contains_key("blob") {
            serde_json::from_value(Value::Object(map))
                .map(ResourceContents::Blob)
                .map_err(D::Error::custom)
        } else {
            Err(D::Error::custom(
                "resource contents need a `text` or a `blob` member",
            ))
        }
    }
}

/// Reads the `type` member of a block, for dispatch.
fn block_type<E: serde::de::Error>(map: &Map<String, Value>) -> Result<Option<&str>, E> {
    match map.get("type") {
        None => Err(E::missing_field("type")),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Ok(None),
    }
}

fn decode_as<T: serde::de::DeserializeOwned, E: serde::de::Error>(
    map: Map<String, Value>,
) -> Result<T, E> {
    serde_json::from_value(Value::Object(map)).map_err(E::custom)
}

/// A content block in a tool result or a prompt message (`ContentBlock`, 2025-06-18+;
/// earlier revisions list the same shapes inline).
///
/// Decoding dispatches on `type`. A block whose `type` is a known tag must be
/// well-formed for that tag (else an error); any other object is kept whole in
/// [`Other`](Self::Other) and re-encoded unchanged, so a block type added by a newer
/// revision survives a proxy. A block without a `type` member is an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`.
    Image(ImageContent),
    /// `type: "audio"` (2025-03-26+).
    Audio(AudioContent),
    /// `type: "resource_link"` (2025-06-18+).
    ResourceLink(ResourceLink),
    /// `type: "resource"`.
    Resource(EmbeddedResource),
    /// Any other `type`, kept as received (including its `type` member).
    Other(Map<String, Value>),
}

impl ContentBlock {
    /// The block's `type` tag (for [`Other`](Self::Other), whatever string it carries,
    /// or `""` if its `type` is not a string).
    pub fn type_name(&self) -> &str {
        match self {
            ContentBlock::Text(_) => TextType::VALUE,
            ContentBlock::Image(_) => ImageType::VALUE,
            ContentBlock::Audio(_) => AudioType::VALUE,
            ContentBlock::ResourceLink(_) => ResourceLinkType::VALUE,
            ContentBlock::Resource(_) => EmbeddedResourceType::VALUE,
            ContentBlock::Other(m) => m.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text, when this is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(v: TextContent) -> Self {
        ContentBlock::Text(v)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        Ok(match block_type::<D::Error>(&map)? {
            Some(TextType::VALUE) => ContentBlock::Text(decode_as(map)?),
            Some(ImageType::VALUE) => ContentBlock::Image(decode_as(map)?),
            Some(AudioType::VALUE) => ContentBlock::Audio(decode_as(map)?),
            Some(ResourceLinkType::VALUE) => ContentBlock::ResourceLink(decode_as(map)?),
            Some(EmbeddedResourceType::VALUE) => ContentBlock::Resource(decode_as(map)?),
            _ => ContentBlock::Other(map),
        })
    }
}

/// A model's request to call a tool, in a sampling message:
/// `{type:"tool_use", id, name, input, _meta?}`.
///
/// Source: 2025-11-25+, "Client features → Sampling → Tool use".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Always `"tool_use"`.
    #[serde(rename = "type")]
    pub kind: ToolUseType,
    /// Identifier of this tool use; a [`ToolResultContent`] refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments (an object matching its input schema).
    pub input: Map<String, Value>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of a tool use, in a sampling message:
/// `{type:"tool_result", toolUseId, content, structuredContent?, isError?, _meta?}`.
///
/// Source: 2025-11-25+, "Client features → Sampling → Tool use".
/// `structuredContent` is an object in 2025-11-25 and any JSON value (`null`
/// included, which is kept) in 2026-07-28.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: ToolResultType,
    /// The `id` of the [`ToolUseContent`] this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result; `Some(Value::Null)` is an explicit `null`.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A content block in a sampling message (`SamplingMessageContentBlock`,
/// 2025-11-25+): text, image, audio, tool use or tool result. Earlier revisions
/// allow text, image and (2025-03-26+) audio only.
///
/// Dispatch and the [`Other`](Self::Other) fallback work as for [`ContentBlock`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SamplingMessageContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`.
    Image(ImageContent),
    /// `type: "audio"` (2025-03-26+).
    Audio(AudioContent),
    /// `type: "tool_use"` (2025-11-25+).
    ToolUse(ToolUseContent),
    /// `type: "tool_result"` (2025-11-25+).
    ToolResult(ToolResultContent),
    /// Any other `type`, kept as received.
    Other(Map<String, Value>),
}

impl SamplingMessageContentBlock {
    /// The block's `type` tag (for [`Other`](Self::Other), whatever string it carries,
    /// or `""`).
    pub fn type_name(&self) -> &str {
        match self {
            SamplingMessageContentBlock::Text(_) => TextType::VALUE,
            SamplingMessageContentBlock::Image(_) => ImageType::VALUE,
            SamplingMessageContentBlock::Audio(_) => AudioType::VALUE,
            SamplingMessageContentBlock::ToolUse(_) => ToolUseType::VALUE,
            SamplingMessageContentBlock::ToolResult(_) => ToolResultType::VALUE,
            SamplingMessageContentBlock::Other(m) => {
                m.get("type").and_then(Value::as_str).unwrap_or("")
            }
        }
    }
}

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        Ok(match block_type::<D::Error>(&map)? {
            Some(TextType::VALUE) => SamplingMessageContentBlock::Text(decode_as(map)?),
            Some(ImageType::VALUE) => SamplingMessageContentBlock::Image(decode_as(map)?),
            Some(AudioType::VALUE) => SamplingMessageContentBlock::Audio(decode_as(map)?),
            Some(ToolUseType::VALUE) => SamplingMessageContentBlock::ToolUse(decode_as(map)?),
            Some(ToolResultType::VALUE) => SamplingMessageContentBlock::ToolResult(decode_as(map)?),
            _ => SamplingMessageContentBlock::Other(map),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn examples_2026_decode_and_round_trip() {
        let t: TextContent = round_trip(json!({"type": "text", "text": "Tool result text"}));
        assert_eq!(t.text, "Tool result text");
        let i: ImageContent = round_trip(json!({"type": "image", "data": "iVBORw0KGgo=",
            "mimeType": "image/png", "annotations": {"audience": ["user"], "priority": 0.9}}));
        assert_eq!(i.mime_type, "image/png");
        let a: AudioContent =
            round_trip(json!({"type": "audio", "data": "UklGRiQ=", "mimeType": "audio/wav"}));
        assert_eq!(a.data, "UklGRiQ=");
        let l: ResourceLink = round_trip(json!({"type": "resource_link",
            "uri": "file:///project/src/main.rs", "name": "main.rs",
            "description": "Primary application entry point", "mimeType": "text/x-rust"}));
        assert_eq!(
            l.description.as_deref(),
            Some("Primary application entry point")
        );
        let e: EmbeddedResource = round_trip(json!({"type": "resource",
            "resource": {"uri": "file:///project/src/main.rs", "mimeType": "text/x-rust",
                "text": "fn main() {}"},
            "annotations": {"audience": ["user", "assistant"], "priority": 0.7,
                "lastModified": "2025-05-03T14:30:00Z"}}));
        assert!(matches!(e.resource, ResourceContents::Text(_)));
        let b: BlobResourceContents = round_trip(
            json!({"uri": "file:///example.png", "mimeType": "image/png", "blob": "iVBO"}),
        );
        assert_eq!(b.blob, "iVBO");
        let t: TextResourceContents = round_trip(
            json!({"uri": "file:///example.txt", "mimeType": "text/plain", "text": "Resource content"}),
        );
        assert_eq!(t.text, "Resource content");
        let u: ToolUseContent = round_trip(json!({"type": "tool_use", "id": "call_abc123",
            "name": "get_weather", "input": {"city": "Paris"}}));
        assert_eq!(u.input["city"], "Paris");
        let r: ToolResultContent = round_trip(json!({"type": "tool_result",
            "toolUseId": "call_abc123",
            "content": [{"type": "text", "text": "Weather in Paris: 18°C, partly cloudy"}]}));
        assert_eq!(
            r.content[0].as_text(),
            Some("Weather in Paris: 18°C, partly cloudy")
        );
    }

    #[test]
    fn older_revision_blocks_round_trip() {
        // 2024-11-05: inline annotations without lastModified, no _meta.
        let b: ContentBlock = round_trip(json!({"type": "image", "data": "AA==",
            "mimeType": "image/gif", "annotations": {"priority": 0.5}}));
        assert!(matches!(b, ContentBlock::Image(_)));
        // 2025-06-18: _meta on a block.
        let b: ContentBlock =
            round_trip(json!({"type": "text", "text": "x", "_meta": {"com.example/k": 1}}));
        assert_eq!(b.type_name(), "text");
    }

    #[test]
    fn unknown_members_kept() {
        let v = json!({"type": "text", "text": "hi", "future": {"a": [1, 2]}});
        let b: ContentBlock = round_trip(v);
        let ContentBlock::Text(t) = b else {
            panic!("not text")
        };
        assert_eq!(t.extra["future"], json!({"a": [1, 2]}));
        let c: ResourceContents =
            round_trip(json!({"uri": "a:b", "blob": "AA==", "x-extra": null}));
        assert!(matches!(c, ResourceContents::Blob(ref b) if b.extra.contains_key("x-extra")));
    }

    #[test]
    fn unknown_block_type_kept_whole() {
        let v = json!({"type": "hologram", "frames": [1, 2, 3], "_meta": {"k": true}});
        let b: ContentBlock = round_trip(v.clone());
        assert_eq!(b.type_name(), "hologram");
        assert_eq!(b, ContentBlock::Other(v.as_object().unwrap().clone()));
        // tool_use is not a ContentBlock type: kept whole, not misread.
        let tu = json!({"type": "tool_use", "id": "1", "name": "n", "input": {}});
        let b: ContentBlock = round_trip(tu.clone());
        assert!(matches!(b, ContentBlock::Other(_)));
        let s: SamplingMessageContentBlock = round_trip(tu);
        assert!(matches!(s, SamplingMessageContentBlock::ToolUse(_)));
        let s: SamplingMessageContentBlock = round_trip(json!({"type": "resource_link",
            "uri": "a:b", "name": "n"}));
        assert_eq!(s.type_name(), "resource_link");
        assert!(matches!(s, SamplingMessageContentBlock::Other(_)));
    }

    #[test]
    fn malformed_known_blocks_are_errors() {
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "text"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "no type"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!("text")).is_err());
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err()
        );
        assert!(serde_json::from_value::<ResourceContents>(json!({"uri": "a:b"})).is_err());
    }

    #[test]
    fn tag_is_emitted_for_constructed_blocks() {
        let v = serde_json::to_value(ContentBlock::from(TextContent::new("hi"))).unwrap();
        assert_eq!(v, json!({"type": "text", "text": "hi"}));
    }

    #[test]
    fn structured_content_null_is_kept() {
        let v = json!({"type": "tool_result", "toolUseId": "t", "content": [],
            "structuredContent": null});
        let r: ToolResultContent = round_trip(v);
        assert_eq!(r.structured_content, Some(Value::Null));
        let r: ToolResultContent =
            round_trip(json!({"type": "tool_result", "toolUseId": "t", "content": []}));
        assert_eq!(r.structured_content, None);
    }

    #[test]
    fn text_beats_blob_when_both_present() {
        let c: ResourceContents =
            serde_json::from_value(json!({"uri": "a:b", "text": "t", "blob": "AA=="})).unwrap();
        let ResourceContents::Text(t) = &c else {
            panic!("not text")
        };
        assert_eq!(t.extra["blob"], "AA==");
        assert_eq!(c.uri(), "a:b");
    }
}
