//! The server fixture set of the MCP conformance suite (`modelcontextprotocol/
//! conformance`, REVISIONS.md §9), registered through `Server::builder`: tools
//! `test_*` (`test_reconnection` closes its SSE stream mid-call, SEP-1699) and
//! `json_schema_2020_12_tool`, resources `test://static-text`,
//! `test://static-binary`, `test://watched-resource` (to subscribe to), template
//! `test://template/{id}/data`, prompts `test_*`,
//! and completion on `test_prompt_with_arguments`.

use serde_json::{json, Value};
use switchboard::server::{HandlerError, Server, ServerBuilder, ToolContext, ToolError};
use switchboard_protocol::types::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitRequestParams, GetPromptResult,
    Implementation, LoggingLevel, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};

/// A 1×1 PNG, base64.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// An empty WAV file, base64.
pub const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
/// The text of `test_simple_text`.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
/// The text of `test_error_handling`'s error.
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";

/// Every fixture tool's name, in registration order.
pub const TOOL_NAMES: [&str; 14] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
];

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("fixture JSON fits the type")
}

fn tool(name: &str, description: &str, input_schema: Value) -> Tool {
    from(json!({"name": name, "description": description, "inputSchema": input_schema}))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn blocks(v: Value) -> CallToolResult {
    from(json!({ "content": v }))
}

/// Asks the client with `requested_schema` (an object schema) and reports the
/// answer as `Elicitation completed: action=…, content=…`.
async fn elicit_with(
    ctx: ToolContext,
    message: &str,
    requested_schema: Value,
) -> Result<CallToolResult, ToolError> {
    let params: ElicitRequestParams =
        from(json!({"message": message, "requestedSchema": requested_schema}));
    let answer = serde_json::to_value(ctx.elicit(params).await?).unwrap_or_default();
    let text = format!(
        "Elicitation completed: action={}, content={}",
        answer["action"].as_str().unwrap_or_default(),
        answer.get("content").cloned().unwrap_or(json!({}))
    );
    Ok(blocks(json!([{"type": "text", "text": text}])))
}

fn embedded() -> Value {
    json!({"type": "resource", "resource": {"uri": "test://embedded-resource",
        "mimeType": "text/plain", "text": "This is an embedded resource content."}})
}

/// The fixture's builder (so tests can add to it or change settings).
pub fn builder() -> ServerBuilder {
    let b = Server::builder(Implementation::new("conformance-fixture", "1.0.0"))
        .instructions("The MCP conformance suite's server fixtures.")
        .tool(
            tool("test_simple_text", "Returns simple text content", no_args()),
            |_, _| async { Ok(blocks(json!([{"type": "text", "text": SIMPLE_TEXT}]))) },
        )
        .tool(
            tool("test_image_content", "Returns image content", no_args()),
            |_, _| async {
                Ok(blocks(
                    json!([{"type": "image", "data": PNG, "mimeType": "image/png"}]),
                ))
            },
        )
        .tool(
            tool("test_audio_content", "Returns audio content", no_args()),
            |_, _| async {
                Ok(blocks(
                    json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]),
                ))
            },
        )
        .tool(
            tool(
                "test_embedded_resource",
                "Returns an embedded resource",
                no_args(),
            ),
            |_, _| async { Ok(blocks(json!([embedded()]))) },
        )
        .tool(
            tool(
                "test_multiple_content_types",
                "Returns text, image and resource content",
                no_args(),
            ),
            |_, _| async {
                Ok(blocks(json!([
                    {"type": "text", "text": "Multiple content types test:"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                    embedded(),
                ])))
            },
        )
        .tool(
            tool(
                "test_tool_with_logging",
                "Sends log messages while it runs",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                for step in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    ctx.log(LoggingLevel::Info, json!(step)).await?;
                }
                ctx.log(LoggingLevel::Debug, json!("debug detail")).await?;
                Ok(blocks(
                    json!([{"type": "text", "text": "Tool with logging executed successfully"}]),
                ))
            },
        )
        .tool(
            tool(
                "test_tool_with_progress",
                "Reports progress while it runs",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                for p in [0.0, 50.0, 100.0] {
                    ctx.progress(p, Some(100.0), Some(format!("step {p}")))
                        .await?;
                }
                Ok(blocks(
                    json!([{"type": "text", "text": "Tool with progress executed successfully"}]),
                ))
            },
        )
        .tool(
            tool("test_error_handling", "Always fails", no_args()),
            |_, _| async { Err(ToolError::new(ERROR_TEXT)) },
        )
        .tool(
            tool(
                "test_sampling",
                "Asks the client's LLM",
                json!({"type": "object", "properties": {"prompt": {"type": "string"}},
                    "required": ["prompt"]}),
            ),
            |args, ctx: ToolContext| async move {
                let prompt = args["prompt"].as_str().unwrap_or_default().to_owned();
                let params: CreateMessageRequestParams = from(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100}));
                let answer = ctx.create_message(params).await?;
                let text = serde_json::to_value(answer.content.blocks())
                    .ok()
                    .and_then(|v| v[0]["text"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                Ok(blocks(
                    json!([{"type": "text", "text": format!("LLM response: {text}")}]),
                ))
            },
        )
        .tool(
            tool(
                "test_elicitation",
                "Asks the user for input",
                json!({"type": "object", "properties": {"message": {"type": "string"}},
                    "required": ["message"]}),
            ),
            |args, ctx: ToolContext| async move {
                let params: ElicitRequestParams = from(json!({
                    "message": args["message"],
                    "requestedSchema": {"type": "object", "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}},
                        "required": ["username", "email"]}}));
                let answer = ctx.elicit(params).await?;
                let text = format!(
                    "User response: {}",
                    serde_json::to_value(&answer).unwrap_or_default()
                );
                Ok(blocks(json!([{"type": "text", "text": text}])))
            },
        )
        .tool(
            tool(
                "test_elicitation_sep1034_defaults",
                "Asks for input with a default for every primitive type (SEP-1034)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                elicit_with(
                    ctx,
                    "Please review and update the form fields with defaults",
                    json!({"type": "object", "properties": {
                        "name": {"type": "string", "description": "User name",
                            "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score",
                            "default": 95.5},
                        "status": {"type": "string", "description": "User status",
                            "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status",
                            "default": true}}}),
                )
                .await
            },
        )
        .tool(
            tool(
                "test_elicitation_sep1330_enums",
                "Asks for input with every enum schema variant (SEP-1330)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                elicit_with(
                    ctx,
                    "Please select options from the enum fields",
                    json!({"type": "object", "properties": {
                        "untitledSingle": {"type": "string", "description": "Untitled single-select",
                            "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "description": "Titled single-select",
                            "oneOf": [{"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}]},
                        "legacyEnum": {"type": "string", "description": "Legacy titled enum",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "description": "Untitled multi-select",
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "description": "Titled multi-select",
                            "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}}}}),
                )
                .await
            },
        )
        .tool(
            tool(
                "json_schema_2020_12_tool",
                "A JSON Schema 2020-12 input schema with $defs and additionalProperties",
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {"address": {"$anchor": "address", "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                        "required": ["city"]}},
                    "properties": {"name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"}},
                    "required": ["name"],
                    // 2020-12 composition and conditionals (SEP-2106) that every
                    // valid call satisfies: they must survive in tools/list.
                    "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
                    "if": {"required": ["address"]},
                    "then": {"properties": {"address": {"type": "object"}}},
                    "else": {"properties": {"name": {"type": "string"}}},
                    "additionalProperties": false}),
            ),
            |args, _| async move {
                Ok(blocks(
                    json!([{"type": "text", "text": format!("received {}", Value::Object(args))}]),
                ))
            },
        )
        .tool(
            tool(
                "test_reconnection",
                "Closes its SSE stream mid-call, then answers on the resumed stream (SEP-1699)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                // 2025-11-25 polling: the client reconnects with Last-Event-ID and
                // gets the result there. Elsewhere (stdio, JSON replies) nothing closes.
                let closed = ctx.close_sse_stream();
                if closed {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Ok(blocks(json!([{"type": "text",
                    "text": format!("Reconnection test completed (stream closed: {closed})")}])))
            },
        );
    let b = b
        .resource(
            from(json!({"uri": "test://static-text", "name": "static-text",
                "description": "A static text resource", "mimeType": "text/plain"})),
            |r| async move {
                Ok(vec![from::<ResourceContents>(json!({"uri": r.uri,
                    "mimeType": "text/plain",
                    "text": "This is the content of the static text resource."}))])
            },
        )
        .resource(
            from::<Resource>(
                json!({"uri": "test://static-binary", "name": "static-binary",
                "description": "A static binary resource", "mimeType": "image/png"}),
            ),
            |r| async move {
                Ok(vec![from::<ResourceContents>(json!({"uri": r.uri,
                    "mimeType": "image/png", "blob": PNG}))])
            },
        )
        .resource(
            from::<Resource>(
                json!({"uri": "test://watched-resource", "name": "watched-resource",
                "description": "A resource to subscribe to", "mimeType": "text/plain"}),
            ),
            |r| async move {
                Ok(vec![from::<ResourceContents>(json!({"uri": r.uri,
                    "mimeType": "text/plain", "text": "Watched resource content."}))])
            },
        )
        .resource_template(
            from::<ResourceTemplate>(json!({"uriTemplate": "test://template/{id}/data",
                "name": "template", "description": "A parameterized resource",
                "mimeType": "application/json"})),
            |r| async move {
                let id = r.variables["id"].clone();
                if id == "missing" {
                    return Err(HandlerError::NotFound(format!("no data for id {id}")));
                }
                Ok(vec![from::<ResourceContents>(json!({"uri": r.uri,
                    "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true,
                        "data": format!("Data for ID: {id}")}).to_string()}))])
            },
        );
    b.prompt(
        from::<Prompt>(json!({"name": "test_simple_prompt",
            "description": "A simple prompt without arguments"})),
        |_| async {
            Ok(from::<GetPromptResult>(json!({"messages": [{"role": "user",
                "content": {"type": "text", "text": "This is a simple prompt for testing."}}]})))
        },
    )
    .prompt(
        from::<Prompt>(json!({"name": "test_prompt_with_arguments",
            "description": "A prompt with required arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}]})),
        |a| async move {
            Ok(from::<GetPromptResult>(json!({"messages": [{"role": "user",
                "content": {"type": "text", "text": format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'", a["arg1"], a["arg2"])}}]})))
        },
    )
    .prompt(
        from::<Prompt>(json!({"name": "test_prompt_with_embedded_resource",
            "description": "A prompt that includes an embedded resource",
            "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed",
                "required": true}]})),
        |a| async move {
            Ok(from::<GetPromptResult>(json!({"messages": [
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": a["resourceUri"], "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {"type": "text",
                    "text": "Please process the embedded resource above."}}]})))
        },
    )
    .prompt(
        from::<Prompt>(json!({"name": "test_prompt_with_image",
            "description": "A prompt that includes image content"})),
        |_| async {
            Ok(from::<GetPromptResult>(json!({"messages": [
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}]})))
        },
    )
    .prompt_completion("test_prompt_with_arguments", "arg1", |r| async move {
        // 150 candidates, so that the cap of 100 is exercised.
        Ok((0..150)
            .map(|i| format!("value{i:03}"))
            .filter(|v| v.starts_with(&r.value))
            .collect())
    })
    .template_completion("test://template/{id}/data", "id", |r| async move {
        Ok(["1", "2", "42"]
            .into_iter()
            .filter(|v| v.starts_with(&r.value))
            .map(str::to_owned)
            .collect())
    })
}

/// The tools [`with_2026_fixtures`] adds, in registration order.
pub const TOOL_NAMES_2026: [&str; 14] = [
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_x_mcp_header",
];

fn name_schema(key: &str) -> Value {
    json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]})
}

fn elicit_params(message: &str, schema: Value) -> ElicitRequestParams {
    from(json!({"message": message, "requestedSchema": schema}))
}

fn sampling_params(text: &str, max_tokens: u64) -> CreateMessageRequestParams {
    from(
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens}),
    )
}

fn text(t: String) -> CallToolResult {
    blocks(json!([{"type": "text", "text": t}]))
}

/// The text of a sampling answer (its text content, or its JSON).
fn sampled(r: &switchboard_protocol::types::CreateMessageResult) -> String {
    let v = serde_json::to_value(r).unwrap_or_default();
    v["content"]["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| v["content"].to_string())
}

/// Adds the fixtures of the 2026-07-28 scenarios (`--requirements 2026-07-28`):
/// the `test_input_required_result_*` tools and prompt (MRTR with the keys the
/// suite expects), `test_missing_capability` (asks for sampling: -32021 when the
/// request did not declare it), `test_streaming_elicitation`, `test_logging_tool`
/// (logs at info; nothing without a `logLevel`), `test_trigger_tool_change` /
/// `test_trigger_prompt_change` (announce a list change to listen streams and
/// sessions), and declares `listChanged`.
pub fn with_2026_fixtures(b: ServerBuilder) -> ServerBuilder {
    let announcer = b.announcer();
    let tools_changed = announcer.clone();
    let prompts_changed = announcer;
    b.list_changed(true)
        .tool(
            tool(
                "test_input_required_result_elicitation",
                "Asks for the user's name (MRTR key user_name)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let r = ctx
                    .elicit_as(
                        "user_name",
                        elicit_params("What is your name?", name_schema("name")),
                    )
                    .await?;
                let v = serde_json::to_value(&r).unwrap_or_default();
                Ok(text(format!(
                    "Hello, {}!",
                    v["content"]["name"].as_str().unwrap_or("stranger")
                )))
            },
        )
        .tool(
            tool(
                "test_input_required_result_sampling",
                "Asks the client's model a question (MRTR key capital_question)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let r = ctx
                    .create_message_as(
                        "capital_question",
                        sampling_params("What is the capital of France?", 100),
                    )
                    .await?;
                Ok(text(format!("The model answered: {}", sampled(&r))))
            },
        )
        .tool(
            tool(
                "test_input_required_result_list_roots",
                "Asks for the client's roots (MRTR key client_roots)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let r = ctx.list_roots_as("client_roots").await?;
                let uris: Vec<String> = r.roots.iter().map(|r| r.uri.clone()).collect();
                Ok(text(format!("Client roots: {}", uris.join(", "))))
            },
        )
        .tool(
            tool(
                "test_input_required_result_request_state",
                "Asks for a confirmation; the sealed requestState is checked on the retry",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"]});
                let r = ctx
                    .elicit_as("confirm", elicit_params("Please confirm", schema))
                    .await?;
                let v = serde_json::to_value(&r).unwrap_or_default();
                Ok(text(format!(
                    "state-ok: confirmation {}",
                    v["content"]["ok"]
                )))
            },
        )
        .tool(
            tool(
                "test_input_required_result_multiple_inputs",
                "Asks for a name, a greeting and the roots at once",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let (name, greeting, roots) = tokio::join!(
                    ctx.elicit_as(
                        "user_name",
                        elicit_params("What is your name?", name_schema("name"))
                    ),
                    ctx.create_message_as("greeting", sampling_params("Generate a greeting", 50)),
                    ctx.list_roots_as("client_roots"),
                );
                let name = serde_json::to_value(name?).unwrap_or_default();
                Ok(text(format!(
                    "name={}, greeting={}, roots={}",
                    name["content"]["name"],
                    sampled(&greeting?),
                    roots?.roots.len()
                )))
            },
        )
        .tool(
            tool(
                "test_input_required_result_multi_round",
                "Asks for a name, then (a second round) a colour",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let name = ctx
                    .elicit_as(
                        "step1",
                        elicit_params("Step 1: What is your name?", name_schema("name")),
                    )
                    .await?;
                let color = ctx
                    .elicit_as(
                        "step2",
                        elicit_params("Step 2: What is your favorite color?", name_schema("color")),
                    )
                    .await?;
                let (n, c) = (
                    serde_json::to_value(name).unwrap_or_default(),
                    serde_json::to_value(color).unwrap_or_default(),
                );
                Ok(text(format!(
                    "name={}, color={}",
                    n["content"]["name"], c["content"]["color"]
                )))
            },
        )
        .tool(
            tool(
                "test_input_required_result_tampered_state",
                "Asks for a confirmation; a tampered requestState is refused",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
                ctx.elicit_as("confirm", elicit_params("Please confirm", schema))
                    .await?;
                Ok(text("confirmed".into()))
            },
        )
        .tool(
            tool(
                "test_input_required_result_capabilities",
                "Asks only for what the request's capabilities allow",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let caps = ctx.client_capabilities().clone();
                let elicit = async {
                    if caps.supports_elicitation() {
                        let r = ctx
                            .elicit_as(
                                "user_name",
                                elicit_params("What is your name?", name_schema("name")),
                            )
                            .await?;
                        Ok::<_, ToolError>(Some(serde_json::to_value(r).unwrap_or_default()))
                    } else {
                        Ok(None)
                    }
                };
                let sample = async {
                    if caps.supports_sampling() {
                        let r = ctx
                            .create_message_as(
                                "capital_question",
                                sampling_params("What is the capital of France?", 100),
                            )
                            .await?;
                        Ok::<_, ToolError>(Some(sampled(&r)))
                    } else {
                        Ok(None)
                    }
                };
                let (e, s) = tokio::join!(elicit, sample);
                Ok(text(format!("elicitation={:?}, sampling={:?}", e?, s?)))
            },
        )
        .tool(
            tool(
                "test_missing_capability",
                "Needs sampling: -32021 when the request did not declare it",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let r = ctx.create_message(sampling_params("Say hello", 20)).await?;
                Ok(text(sampled(&r)))
            },
        )
        .tool(
            tool(
                "test_streaming_elicitation",
                "Asks for input: the answer is an input_required result, never a request",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                let r = ctx
                    .elicit_as(
                        "user_name",
                        elicit_params("What is your name?", name_schema("name")),
                    )
                    .await?;
                Ok(text(format!("{:?}", r.action)))
            },
        )
        .tool(
            tool(
                "test_logging_tool",
                "Logs at info (only with a logLevel)",
                no_args(),
            ),
            |_, ctx: ToolContext| async move {
                ctx.log(LoggingLevel::Info, json!("test_logging_tool ran"))
                    .await?;
                Ok(text("logged".into()))
            },
        )
        .tool(
            tool(
                "test_trigger_tool_change",
                "Announces that the tool list changed",
                no_args(),
            ),
            move |_, _| {
                let a = tools_changed.clone();
                async move { Ok(text(format!("announced to {}", a.tools_changed()))) }
            },
        )
        .tool(
            tool(
                "test_trigger_prompt_change",
                "Announces that the prompt list changed",
                no_args(),
            ),
            move |_, _| {
                let a = prompts_changed.clone();
                async move { Ok(text(format!("announced to {}", a.prompts_changed()))) }
            },
        )
        .tool(
            tool(
                "test_x_mcp_header",
                "Echoes its region argument, mirrored in the Mcp-Param-Region header",
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}}}),
            ),
            |args, _| async move {
                Ok(text(format!(
                    "region={}",
                    args.get("region").cloned().unwrap_or(Value::Null)
                )))
            },
        )
        .prompt_with_context(
            from::<Prompt>(json!({"name": "test_input_required_result_prompt",
                "description": "A prompt that asks for context first (MRTR key user_context)"})),
            |_, ctx: ToolContext| async move {
                let schema = name_schema("context");
                let r = ctx
                    .elicit_as(
                        "user_context",
                        elicit_params("What context should the prompt use?", schema),
                    )
                    .await?;
                let v = serde_json::to_value(r).unwrap_or_default();
                Ok(from::<GetPromptResult>(
                    json!({"messages": [{"role": "user",
                    "content": {"type": "text", "text": format!(
                        "Use this context: {}", v["content"]["context"])}}]}),
                ))
            },
        )
}

/// The fixture server (the 2025-11-25 fixtures).
pub fn server() -> Server {
    builder().build().expect("the fixture registers cleanly")
}

/// The fixture server with the 2026-07-28 fixtures too: what the conformance
/// example serves.
pub fn server_2026() -> Server {
    with_2026_fixtures(builder())
        .build()
        .expect("the fixture registers cleanly")
}

/// The text of the first content block of a `tools/call` result.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The content blocks of a `tools/call` result, decoded.
pub fn decode_blocks(result: &Value) -> Vec<ContentBlock> {
    from(result["content"].clone())
}
