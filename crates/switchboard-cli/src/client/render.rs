//! Human-readable output of the client commands: tables sized to their content and
//! MCP content blocks ("Tools" → "Tool Result", every revision's `ContentBlock`)
//! printed readably. Works on the results' JSON (`serde_json::Value`), so members a
//! newer revision adds are shown or ignored, never an error.
//!
//! This module must not know about connections, arguments or exit codes: it turns
//! JSON into text.

use std::borrow::Cow;

use serde_json::Value;

/// `text` made safe to show on a terminal: every control character but newline
/// and tab (C0, DEL and C1, which include ESC and CSI, the starts of terminal
/// escape sequences) and every bidirectional formatting character (U+202A..U+202E,
/// U+2066..U+2069, U+200E, U+200F, U+061C) is written as a visible `\u{..}` escape.
/// A server's text (a tool description, a log message, a result) could
/// otherwise recolour, move or hide what the user reads, e.g. conceal part of a
/// tool description; the server is not trusted. Borrowed when nothing changes.
pub fn printable(text: &str) -> Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
    }
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` [`printable`] and on one line: a newline as `\u{a}` too (a name,
/// a path or a message quoted in a line of its own; a log event).
pub fn one_line(text: &str) -> String {
    printable(text).replace('\n', "\\u{a}")
}

/// A table: a header row and rows of cells, printed with columns padded to their
/// widest cell (in characters) and separated by two spaces; the last column is not
/// padded. A cell's newlines become spaces.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are empty, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells: Vec<String> = cells
            .into_iter()
            .take(self.header.len())
            .map(|c| printable(&c.split_whitespace().collect::<Vec<_>>().join(" ")).into_owned())
            .collect();
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// The table as text, one line per row (header first), each ending in `\n`.
    pub fn render(&self) -> String {
        let width = |s: &String| s.chars().count();
        let mut widths: Vec<usize> = self.header.iter().map(width).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let last = row.len() - 1;
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i < last {
                    let pad = widths[i] - width(cell) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The first line of a description.
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_owned()
}

/// How many bytes the base64 text `data` (RFC 4648 §4, padded or not) decodes
/// to, without decoding it; `None` when it is not base64: a character outside
/// the alphabet, `=` anywhere but at the end (at most two), or a length no
/// base64 text has.
pub fn base64_len(data: &str) -> Option<usize> {
    let data = data.trim_end().as_bytes();
    let padding = data.iter().rev().take_while(|b| **b == b'=').count();
    let body = &data[..data.len() - padding];
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    if padding > 2 || !body.iter().all(alphabet) {
        return None;
    }
    let (n, rest) = (body.len(), body.len() % 4);
    let padded_ok = padding == 0 || (data.len() % 4 == 0 && padding == (4 - rest) % 4);
    if rest == 1 || !padded_ok {
        return None;
    }
    Some(n / 4 * 3 + rest.saturating_sub(1))
}

/// `N bytes`, the size of base64 `data`, or `not base64` ([`base64_len`]).
fn base64_size(data: &str) -> String {
    match base64_len(data) {
        Some(n) => format!("{n} bytes"),
        None => "not base64".to_owned(),
    }
}

/// A tool's arguments as `name*: type` (`*` marks required ones), comma separated,
/// from its `inputSchema`.
fn tool_arguments(input_schema: &Value) -> String {
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    props
        .iter()
        .map(|(name, schema)| {
            let ty = match schema.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            let star = if required.contains(&name.as_str()) {
                "*"
            } else {
                ""
            };
            format!("{name}{star}: {ty}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `tools/list` table: NAME, ARGUMENTS (`*` = required), DESCRIPTION.
pub fn tools_table(tools: &[Value]) -> String {
    let mut t = Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]);
    for tool in tools {
        t.row(vec![
            str_of(tool, "name").to_owned(),
            tool_arguments(tool.get("inputSchema").unwrap_or(&Value::Null)),
            first_line(str_of(tool, "description")),
        ]);
    }
    t.render()
}

/// The `resources/list` table: URI, NAME, MIME TYPE, DESCRIPTION.
pub fn resources_table(resources: &[Value]) -> String {
    let mut t = Table::new(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"]);
    for r in resources {
        t.row(vec![
            str_of(r, "uri").to_owned(),
            str_of(r, "name").to_owned(),
            str_of(r, "mimeType").to_owned(),
            first_line(str_of(r, "description")),
        ]);
    }
    t.render()
}

/// The `resources/templates/list` table: URI TEMPLATE, NAME, MIME TYPE, DESCRIPTION.
pub fn templates_table(templates: &[Value]) -> String {
    let mut t = Table::new(&["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"]);
    for r in templates {
        t.row(vec![
            str_of(r, "uriTemplate").to_owned(),
            str_of(r, "name").to_owned(),
            str_of(r, "mimeType").to_owned(),
            first_line(str_of(r, "description")),
        ]);
    }
    t.render()
}

/// The `prompts/list` table: NAME, ARGUMENTS (`*` = required), DESCRIPTION.
pub fn prompts_table(prompts: &[Value]) -> String {
    let mut t = Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]);
    for p in prompts {
        let args = p
            .get("arguments")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|arg| {
                        let star = if arg.get("required") == Some(&Value::Bool(true)) {
                            "*"
                        } else {
                            ""
                        };
                        format!("{}{star}", str_of(arg, "name"))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        t.row(vec![
            str_of(p, "name").to_owned(),
            args,
            first_line(str_of(p, "description")),
        ]);
    }
    t.render()
}

/// One resource's contents (`TextResourceContents` / `BlobResourceContents`): the
/// text as is, or `[blob URI (MIME), N bytes]`.
pub fn resource_contents(c: &Value) -> String {
    let mime = str_of(c, "mimeType");
    let mime = if mime.is_empty() {
        String::new()
    } else {
        format!(" ({mime})")
    };
    if let Some(text) = c.get("text").and_then(Value::as_str) {
        text.to_owned()
    } else if let Some(blob) = c.get("blob").and_then(Value::as_str) {
        format!("[blob {}{mime}, {}]", str_of(c, "uri"), base64_size(blob))
    } else {
        format!("[resource {}{mime}]", str_of(c, "uri"))
    }
}

/// One content block: text as is; image and audio as `[image MIME, N bytes]`;
/// an embedded resource as `[resource URI (MIME)]` followed by its text, if any; a
/// resource link as `[resource link URI]`; any other type as its JSON.
pub fn content_block(block: &Value) -> String {
    let kind = str_of(block, "type");
    match kind {
        "text" => str_of(block, "text").to_owned(),
        "image" | "audio" => format!(
            "[{kind} {}, {}]",
            str_of(block, "mimeType"),
            base64_size(str_of(block, "data"))
        ),
        "resource" => {
            let r = block.get("resource").unwrap_or(&Value::Null);
            let mime = str_of(r, "mimeType");
            let mime = if mime.is_empty() {
                String::new()
            } else {
                format!(" ({mime})")
            };
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {}{mime}]\n{text}", str_of(r, "uri")),
                None => resource_contents(r),
            }
        }
        "resource_link" => format!("[resource link {}]", str_of(block, "uri")),
        _ => block.to_string(),
    }
}

/// A `tools/call` result: each content block on its own line(s), then, if present,
/// `structuredContent:` and the structured content as pretty JSON. A text block
/// that is the structured content serialized (the spec's backward-compatible
/// form, "Tools" → "Structured Content": the same JSON value, however spaced) is
/// shown once: as that pretty JSON, in the block's place, with no
/// `structuredContent:` section.
pub fn tool_result(result: &Value) -> String {
    let structured = result.get("structuredContent");
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let same = structured.and_then(|s| {
        blocks.iter().position(|b| {
            str_of(b, "type") == "text"
                && serde_json::from_str::<Value>(str_of(b, "text")).is_ok_and(|v| v == *s)
        })
    });
    let pretty = |s: &Value| serde_json::to_string_pretty(s).unwrap_or_default();
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        match (same, structured) {
            (Some(j), Some(s)) if i == j => out.push_str(&pretty(s)),
            _ => out.push_str(&content_block(block)),
        }
        out.push('\n');
    }
    if let (None, Some(s)) = (same, structured) {
        out.push_str("structuredContent:\n");
        out.push_str(&pretty(s));
        out.push('\n');
    }
    out
}

/// A `prompts/get` result: the description (if any), then each message as
/// `ROLE: content`.
pub fn prompt_result(result: &Value) -> String {
    let mut out = String::new();
    let description = str_of(result, "description");
    if !description.is_empty() {
        out.push_str(&format!("# {description}\n"));
    }
    for m in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = m.get("content").map(content_block).unwrap_or_default();
        out.push_str(&format!("{}: {content}\n", str_of(m, "role")));
    }
    out
}

/// A `notifications/message` (logging) for stderr: `[LEVEL] logger: data` (data as
/// is when it is a string, else as JSON).
pub fn log_line(params: &Value) -> String {
    let data = match params.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let logger = str_of(params, "logger");
    if logger.is_empty() {
        format!("[{}] {data}", str_of(params, "level"))
    } else {
        format!("[{}] {logger}: {data}", str_of(params, "level"))
    }
}

/// A progress notification for stderr when no bar is drawn:
/// `progress: P/T message` (`/T` only with a total).
pub fn progress_line(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut s = format!("progress: {progress}");
    if let Some(t) = total {
        s.push_str(&format!("/{t}"));
    }
    if let Some(m) = message {
        s.push(' ');
        s.push_str(m);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terminal_controls_and_bidi_marks_become_visible() {
        assert!(matches!(printable("plain text\n\ttab"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[8mhidden\u{1b}[0m"),
            "a\\u{1b}[8mhidden\\u{1b}[0m"
        );
        assert_eq!(printable("x\u{9b}2Jy\u{7f}"), "x\\u{9b}2Jy\\u{7f}");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(printable("\r overwrite"), "\\u{d} overwrite");
        // In a table the escape is what the width counts.
        let mut t = Table::new(&["NAME", "DESCRIPTION"]);
        t.row(vec!["t".into(), "safe\u{1b}]0;title\u{7}".into()]);
        assert_eq!(
            t.render(),
            "NAME  DESCRIPTION\nt     safe\\u{1b}]0;title\\u{7}\n"
        );
    }

    #[test]
    fn tables_are_sized_to_their_content() {
        let mut t = Table::new(&["A", "LONGER", "C"]);
        t.row(vec!["xyz".into(), "1".into(), "last\ncell".into()]);
        t.row(vec!["é".into()]);
        assert_eq!(
            t.render(),
            "A    LONGER  C\nxyz  1       last cell\né\n",
            "columns padded to the widest cell plus two; trailing space trimmed"
        );
    }

    #[test]
    fn base64_lengths() {
        for (text, n) in [
            ("", 0),
            ("Zg==", 1),
            ("Zm8=", 2),
            ("Zm9v", 3),
            ("Zm9vYg==", 4),
            ("Zm9vYmFy", 6),
            ("Zm9vYg", 4),
            ("Zm8", 2),
            ("a+/9", 3),
        ] {
            assert_eq!(base64_len(text), Some(n), "{text}");
        }
        for bad in ["not base64!", "Zg=a", "Z", "Zg===", "Zg=", "Zm9vY", "é123"] {
            assert_eq!(base64_len(bad), None, "{bad}");
        }
        assert_eq!(
            content_block(&json!({"type": "image", "data": "%%%", "mimeType": "image/png"})),
            "[image image/png, not base64]"
        );
    }

    #[test]
    fn content_blocks_print_readably() {
        assert_eq!(content_block(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            content_block(&json!({"type": "image", "data": "Zm9vYmFy", "mimeType": "image/png"})),
            "[image image/png, 6 bytes]"
        );
        assert_eq!(
            content_block(&json!({"type": "audio", "data": "Zg==", "mimeType": "audio/wav"})),
            "[audio audio/wav, 1 bytes]"
        );
        assert_eq!(
            content_block(&json!({"type": "resource", "resource":
                {"uri": "x://a", "mimeType": "text/plain", "text": "body"}})),
            "[resource x://a (text/plain)]\nbody"
        );
        assert_eq!(
            content_block(&json!({"type": "resource", "resource":
                {"uri": "x://b", "blob": "Zm9v"}})),
            "[blob x://b, 3 bytes]"
        );
        assert_eq!(
            content_block(&json!({"type": "resource_link", "uri": "x://c", "name": "c"})),
            "[resource link x://c]"
        );
        assert_eq!(
            content_block(&json!({"type": "future", "k": 1})),
            r#"{"type":"future","k":1}"#
        );
    }

    #[test]
    fn structured_content_the_text_repeats_is_shown_once() {
        // The text is its serialization (however spaced): once, pretty.
        for text in ["{\"sum\":3}", "{ \"sum\": 3 }\n"] {
            let r = tool_result(&json!({"content": [{"type": "text", "text": text}],
                "structuredContent": {"sum": 3}}));
            assert_eq!(r, "{\n  \"sum\": 3\n}\n", "{text:?}");
        }
        // Beside other blocks, in its place.
        let r = tool_result(&json!({"content": [
            {"type": "text", "text": "Sum:"},
            {"type": "text", "text": "{\"sum\":3}"},
            {"type": "resource_link", "uri": "x://s"}],
            "structuredContent": {"sum": 3}}));
        assert_eq!(r, "Sum:\n{\n  \"sum\": 3\n}\n[resource link x://s]\n");
        // Different: both.
        let r = tool_result(
            &json!({"content": [{"type": "text", "text": "{\"sum\":4}"}],
            "structuredContent": {"sum": 3}}),
        );
        assert_eq!(r, "{\"sum\":4}\nstructuredContent:\n{\n  \"sum\": 3\n}\n");
        let r = tool_result(&json!({"content": [{"type": "text", "text": "three"}],
            "structuredContent": {"sum": 3}}));
        assert_eq!(r, "three\nstructuredContent:\n{\n  \"sum\": 3\n}\n");
        // No content at all: the section alone.
        let r = tool_result(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(r, "structuredContent:\n{\n  \"a\": 1\n}\n");
    }

    #[test]
    fn listings_show_arguments_with_required_marks() {
        let tools = tools_table(&[json!({"name": "add", "description": "Adds.\nMore.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"},
                "b": {"type": ["string", "null"]}}, "required": ["a"]}})]);
        assert_eq!(
            tools,
            "NAME  ARGUMENTS                    DESCRIPTION\nadd   a*: integer, b: string|null  Adds.\n"
        );
        let prompts = prompts_table(&[json!({"name": "greet", "arguments": [
            {"name": "name", "required": true}, {"name": "style"}]})]);
        assert!(prompts.contains("greet  name*, style"), "{prompts}");
    }

    #[test]
    fn logs_and_progress_lines() {
        assert_eq!(
            log_line(&json!({"level": "warning", "data": "careful"})),
            "[warning] careful"
        );
        assert_eq!(
            log_line(&json!({"level": "info", "logger": "db", "data": {"k": 1}})),
            r#"[info] db: {"k":1}"#
        );
        assert_eq!(
            progress_line(2.0, Some(6.0), Some("step 2 of 6")),
            "progress: 2/6 step 2 of 6"
        );
        assert_eq!(progress_line(0.5, None, None), "progress: 0.5");
    }

    #[test]
    fn prompt_results() {
        let r = prompt_result(&json!({"description": "A greeting", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Hello"}}]}));
        assert_eq!(r, "# A greeting\nuser: Hello\n");
    }
}
