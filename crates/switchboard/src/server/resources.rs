//! Resources: static resources, RFC 6570 level-1 resource templates and their
//! matching, and what a read handler gets ("Server features → Resources").
//!
//! `resources/read` looks for a static resource with exactly the URI first, then for
//! the first registered template that matches. Not found is -32002 before 2026-07-28
//! and -32602 from it (`ProtocolVersion::resource_not_found_code`); an empty
//! `contents` is never sent for a missing resource (2026-07-28 forbids it).
//!
//! This module must not know about transports, JSON-RPC ids or sessions.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_protocol::types::{Resource, ResourceContents, ResourceTemplate};

use super::context::BoxFuture;
use super::HandlerError;

/// What a read handler gets: the URI asked for and, for a template, the values of its
/// variables (percent-decoded; empty for a static resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The URI from `resources/read`, as sent.
    pub uri: String,
    /// Template variable → value, e.g. `id` → `42` for `test://template/{id}/data`.
    pub variables: BTreeMap<String, String>,
}

pub(crate) type ResourceHandler = Arc<
    dyn Fn(ResourceRequest) -> BoxFuture<'static, Result<Vec<ResourceContents>, HandlerError>>
        + Send
        + Sync,
>;

pub(crate) struct RegisteredResource {
    pub(crate) resource: Resource,
    pub(crate) handler: ResourceHandler,
}

pub(crate) struct RegisteredTemplate {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: ResourceHandler,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// An RFC 6570 level-1 URI template (`{var}` simple string expansion only), used to
/// match URIs, e.g. `test://template/{id}/data`.
///
/// Matching: literals must match exactly; a variable matches one or more characters
/// other than `/`, `?` and `#` (level-1 expansion percent-encodes every reserved
/// character, so a value never contains them literally), and its value is
/// percent-decoded (kept as sent when that is not UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

/// Why a URI template was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("URI template {template:?}: {reason}")]
pub struct UriTemplateError {
    /// The template.
    pub template: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl UriTemplate {
    /// Parses a level-1 template. Errors: unbalanced braces, an empty or invalid
    /// variable name (RFC 6570 `varname`: letters, digits, `_`, `%XX`, inner `.`), an
    /// operator or modifier of a higher level (`{+x}`, `{x*}`, `{x,y}`, ...), two
    /// variables with nothing between them (ambiguous), or no variable at all.
    pub fn parse(template: &str) -> Result<UriTemplate, UriTemplateError> {
        let err = |reason| UriTemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => return Err(err("unbalanced '}'")),
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(rest[..i].to_owned()));
                    }
                    let after = &rest[i + 1..];
                    let end = after.find('}').ok_or_else(|| err("unbalanced '{'"))?;
                    let name = &after[..end];
                    if name.is_empty() {
                        return Err(err("empty variable name"));
                    }
                    let valid = name.split('.').all(|seg| {
                        !seg.is_empty()
                            && seg
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'%')
                    });
                    if !valid {
                        return Err(err(
                            "only level-1 templates ({name}) are supported: no operators, \
                             modifiers or lists",
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var(_))) {
                        return Err(err("two variables with nothing between them"));
                    }
                    parts.push(Part::Var(name.to_owned()));
                    rest = &after[end + 1..];
                }
            }
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return Err(err("no variable (register a static resource instead)"));
        }
        Ok(UriTemplate { parts })
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` matches, else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut out = Vec::new();
        match_from(&self.parts, uri, &mut out).then(|| out.into_iter().collect())
    }
}

fn match_from(parts: &[Part], s: &str, out: &mut Vec<(String, String)>) -> bool {
    match parts.split_first() {
        None => s.is_empty(),
        Some((Part::Literal(l), rest)) => s
            .strip_prefix(l.as_str())
            .is_some_and(|r| match_from(rest, r, out)),
        Some((Part::Var(name), rest)) => {
            let max = s.find(['/', '?', '#']).unwrap_or(s.len());
            let ends = s[..max]
                .char_indices()
                .skip(1)
                .map(|(i, _)| i)
                .chain(std::iter::once(max).filter(|m| *m > 0));
            for end in ends {
                out.push((name.clone(), percent_decode(&s[..end])));
                if match_from(rest, &s[end..], out) {
                    return true;
                }
                out.pop();
            }
            false
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_matching() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id"]);
        let m = t.matches("test://template/42/data").unwrap();
        assert_eq!(m["id"], "42");
        assert_eq!(
            t.matches("test://template/a%20b/data").unwrap()["id"],
            "a b"
        );
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/1/data/x").is_none());
        let t = UriTemplate::parse("file:///{dir}/{name}.txt").unwrap();
        let m = t.matches("file:///docs/a.b.txt").unwrap();
        assert_eq!((m["dir"].as_str(), m["name"].as_str()), ("docs", "a.b"));
        let t = UriTemplate::parse("x://{a}").unwrap();
        assert_eq!(t.matches("x://é").unwrap()["a"], "é");
        assert!(t.matches("x://").is_none());
    }

    #[test]
    fn refused_templates() {
        for bad in [
            "x://{a",
            "x://a}",
            "x://{}",
            "x://{+a}",
            "x://{a*}",
            "x://{a,b}",
            "x://{a}{b}",
            "x://plain",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
