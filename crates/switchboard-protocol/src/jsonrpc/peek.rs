//! What the first bytes of a message too long to read say about it: its top-level
//! `id`, and whether it is a request (`method`) or an answer (`result` or
//! `error`). A line transport drops such a message unread; with this it can still
//! fail the one request the message answered, or answer the request it carried,
//! instead of leaving a caller to wait for its timeout.
//!
//! It reads a prefix, never the whole message, so it does not validate: a member
//! counts once its key is complete, an `id` once its value is complete (the prefix
//! may end anywhere). It must not know about limits, lines or transports.

use super::id::Id;

/// What [`peek`] found in the prefix of a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peeked {
    /// The top-level `id`, when its value was complete in the prefix and a valid
    /// JSON-RPC id (a string or an integer).
    pub id: Option<Id>,
    /// A top-level `method` member was seen: a request (with an id) or a
    /// notification.
    pub method: bool,
    /// A top-level `result` or `error` member was seen: an answer.
    pub answer: bool,
}

impl Peeked {
    /// An answer (`result` or `error`, no `method`) to the request with this id.
    pub fn answer_to(&self) -> Option<&Id> {
        self.id.as_ref().filter(|_| self.answer && !self.method)
    }

    /// A request (`method`, no `result` or `error`) with this id.
    pub fn request_id(&self) -> Option<&Id> {
        self.id.as_ref().filter(|_| self.method && !self.answer)
    }
}

/// Whether the JSON text `json` may have a member named `name`, at any depth:
/// `false` only when it certainly has none, because `"name"` (quoted) does not
/// occur in it and it holds no `\`, so none of its strings spells `name` with an
/// escape either. A filter that costs a substring search, before a decode that
/// only wants that member (a request's `_meta` or `task` in its params, say).
/// `name` must be written in JSON without escapes (no `"`, `\` or control
/// characters).
pub fn may_have_member(json: &str, name: &str) -> bool {
    if json.contains('\\') {
        return true;
    }
    let bytes = json.as_bytes();
    json.match_indices(name)
        .any(|(at, _)| at > 0 && bytes[at - 1] == b'"' && bytes.get(at + name.len()) == Some(&b'"'))
}

/// Reads the top-level members of the JSON object that `prefix` starts, as far as
/// the prefix goes (see the module docs). Anything that is not an object gives an
/// empty [`Peeked`].
pub fn peek(prefix: &[u8]) -> Peeked {
    let mut out = Peeked::default();
    let mut at = skip_ws(prefix, 0);
    if prefix.get(at) != Some(&b'{') {
        return out;
    }
    at += 1;
    loop {
        at = skip_ws(prefix, at);
        if prefix.get(at) != Some(&b'"') {
            return out;
        }
        let Some(key_end) = string_end(prefix, at) else {
            return out;
        };
        let key = &prefix[at + 1..key_end - 1];
        at = skip_ws(prefix, key_end);
        if prefix.get(at) != Some(&b':') {
            return out;
        }
        at = skip_ws(prefix, at + 1);
        match key {
            b"method" => out.method = true,
            b"result" | b"error" => out.answer = true,
            _ => {}
        }
        let Some(value_end) = value_end(prefix, at) else {
            return out;
        };
        if key == b"id" {
            out.id = std::str::from_utf8(&prefix[at..value_end])
                .ok()
                .and_then(|text| {
                    serde_json::from_str::<Box<serde_json::value::RawValue>>(text).ok()
                })
                .and_then(|raw| Id::from_raw(&raw).ok());
        }
        at = skip_ws(prefix, value_end);
        match prefix.get(at) {
            Some(b',') => at += 1,
            _ => return out,
        }
    }
}

/// The top-level `id` of the JSON object that `suffix` ends, when it is the
/// object's last member (`…,"id":7}`, as the TypeScript SDK writes its messages):
/// read backwards from the closing brace, so it is sound for any valid JSON that
/// ends this way. `None` otherwise.
pub fn peek_tail(suffix: &[u8]) -> Option<Id> {
    let mut end = suffix.len();
    while end > 0 && matches!(suffix[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    if end == 0 || suffix[end - 1] != b'}' {
        return None;
    }
    let value_end = skip_ws_back(suffix, end - 1);
    let value_start = match suffix.get(value_end.checked_sub(1)?)? {
        b'"' => {
            // The opening quote: the nearest `"` before that is not escaped (an
            // even number of backslashes before it).
            let mut i = value_end - 1;
            loop {
                i = suffix[..i].iter().rposition(|&c| c == b'"')?;
                let slashes = suffix[..i]
                    .iter()
                    .rev()
                    .take_while(|&&c| c == b'\\')
                    .count();
                if slashes % 2 == 0 {
                    break i;
                }
            }
        }
        b'0'..=b'9' => {
            let digits = suffix[..value_end]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit() || **c == b'-')
                .count();
            value_end - digits
        }
        _ => return None,
    };
    let colon = skip_ws_back(suffix, value_start);
    if suffix.get(colon.checked_sub(1)?) != Some(&b':') {
        return None;
    }
    let key_end = skip_ws_back(suffix, colon - 1);
    if key_end < 4 || &suffix[key_end - 4..key_end] != b"\"id\"" {
        return None;
    }
    let before = skip_ws_back(suffix, key_end - 4);
    if !matches!(suffix.get(before.checked_sub(1)?), Some(b',' | b'{')) {
        return None;
    }
    let text = std::str::from_utf8(&suffix[value_start..value_end]).ok()?;
    let raw = serde_json::from_str::<Box<serde_json::value::RawValue>>(text).ok()?;
    Id::from_raw(&raw).ok()
}

/// The index just past the last non-whitespace byte before `at`.
fn skip_ws_back(b: &[u8], mut at: usize) -> usize {
    while at > 0 && matches!(b[at - 1], b' ' | b'\t' | b'\n' | b'\r') {
        at -= 1;
    }
    at
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while matches!(b.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The index just past the string starting at `at` (a `"`), if it ends in `b`.
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the value starting at `at`, if it ends in `b`. A number or
/// literal counts as ended only when a delimiter follows it inside `b`.
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = b[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            Some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_name_is_ruled_out_only_when_it_cannot_be_there() {
        let p = r#"{"name":"echo","arguments":{"text":"_meta task"}}"#;
        assert!(
            !may_have_member(p, "_meta"),
            "only inside a value, unquoted"
        );
        assert!(!may_have_member(p, "task"));
        assert!(may_have_member(p, "name"));
        assert!(may_have_member(p, "text"), "at any depth");
        assert!(may_have_member(r#"{"a":{"_meta":{}}}"#, "_meta"));
        assert!(
            may_have_member(r#"{"\u005fmeta":{}}"#, "_meta"),
            "an escape anywhere may spell it"
        );
        assert!(may_have_member(r#"{"x":"line\nbreak"}"#, "_meta"));
        // A string value equal to the name is not a member, but may be taken for
        // one: the filter errs only that way.
        assert!(may_have_member(r#"{"x":"task"}"#, "task"));
        assert!(!may_have_member(r#"{"tasks":1}"#, "task"));
        assert!(!may_have_member("", "task"));
    }

    #[test]
    fn an_answer_s_id_comes_before_its_result() {
        let p =
            peek(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"aaaa"#);
        assert_eq!(p.answer_to(), Some(&Id::from(7)));
        assert_eq!(p.request_id(), None);
        let p = peek(br#"{ "id" : "abc" , "error": {"code": -32000"#);
        assert_eq!(p.answer_to(), Some(&Id::from("abc")));
    }

    #[test]
    fn a_request_s_id_and_method() {
        let p =
            peek(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"x":"#);
        assert_eq!(p.request_id(), Some(&Id::from(3)));
        assert_eq!(p.answer_to(), None);
        // The id after a complete nested value (strings with brackets and escapes).
        let p = peek(br#"{"method":"x","_m":{"a":["}\"]",{"b":1}]},"id":-4,"params":{"#);
        assert_eq!(p.request_id(), Some(&Id::from(-4)));
    }

    #[test]
    fn the_id_as_the_last_member() {
        assert_eq!(
            peek_tail(br#"xx"}]},"jsonrpc":"2.0","id":12}"#),
            Some(Id::from(12))
        );
        assert_eq!(
            peek_tail(b"\"x\":1, \"id\" : \"a\\\"b\" }\r\n"),
            Some(Id::from("a\"b"))
        );
        assert_eq!(peek_tail(br#"{"id":-3}"#), Some(Id::from(-3)));
        // A nested object's id, a key that only ends in "id", a string that holds
        // the pattern, a cut or missing brace: not the top-level id.
        assert_eq!(peek_tail(br#","result":{"id":1}}"#), None);
        assert_eq!(peek_tail(br#","xid":1}"#), None);
        assert_eq!(peek_tail(br#""text":"a,\"id\":1}"}"#), None);
        assert_eq!(peek_tail(br#","id":1"#), None);
        assert_eq!(peek_tail(br#","id":null}"#), None);
        assert_eq!(peek_tail(b""), None);
    }

    #[test]
    fn what_the_prefix_does_not_show_stays_unknown() {
        // The id's value cut short: unknown, whatever it looks like so far.
        assert_eq!(peek(br#"{"id":12"#).id, None);
        assert_eq!(peek(br#"{"id":"ab"#).id, None);
        // The id after the long member: never reached.
        let p = peek(br#"{"jsonrpc":"2.0","result":{"content":"xxxxxxx"#);
        assert!(p.answer && p.id.is_none());
        assert_eq!(p.answer_to(), None);
        // Not an object, or not a valid id.
        assert_eq!(peek(b"[1,2"), Peeked::default());
        assert_eq!(peek(br#"{"id":1.5,"result":{"#).id, None);
        assert_eq!(peek(br#"{"id":null,"error":{"#).answer_to(), None);
        assert_eq!(peek(b""), Peeked::default());
    }
}
