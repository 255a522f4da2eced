//! The gateway's merged catalog: every upstream's tools, prompts, resources and
//! resource templates under their served names (`{prefix}__{name}`), the index
//! from a served name back to its upstream, and the gateway's own list cursor.
//!
//! Pure: no upstreams, no tasks, no I/O. The upstreams' lists come in as
//! [`Snapshot`]s; [`merge`] makes one [`Merged`], which routes read.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

/// What an upstream listed, each list complete (every page walked).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// `tools/list`'s `tools`.
    pub tools: Vec<Value>,
    /// `prompts/list`'s `prompts`.
    pub prompts: Vec<Value>,
    /// `resources/list`'s `resources`.
    pub resources: Vec<Value>,
    /// `resources/templates/list`'s `resourceTemplates`.
    pub templates: Vec<Value>,
}

impl Snapshot {
    /// The list under `key` ([`Snapshot::list_mut`]).
    pub(crate) fn list(&self, key: &str) -> &Vec<Value> {
        match key {
            "tools" => &self.tools,
            "prompts" => &self.prompts,
            "resources" => &self.resources,
            _ => &self.templates,
        }
    }

    /// The list under `key` (`tools`, `prompts`, `resources`, or else
    /// `resourceTemplates`).
    pub(crate) fn list_mut(&mut self, key: &str) -> &mut Vec<Value> {
        match key {
            "tools" => &mut self.tools,
            "prompts" => &mut self.prompts,
            "resources" => &mut self.resources,
            _ => &mut self.templates,
        }
    }
}

/// The separator of a served name: `{prefix}__{name}`.
pub(crate) const SEPARATOR: &str = "__";

/// The longest tool name the common model APIs take (OpenAI, Anthropic): 64.
pub(crate) const MODEL_API_NAME_LIMIT: usize = 64;

/// The served name of `name` under `prefix` (none: the name itself).
pub(crate) fn served(prefix: Option<&str>, name: &str) -> String {
    match prefix {
        Some(p) => format!("{p}{SEPARATOR}{name}"),
        None => name.to_owned(),
    }
}

/// What is wrong with a served tool name, if anything: the tool-name rule of
/// 2025-11-25 ("Tool names SHOULD be 1 to 128 characters of `A-Z a-z 0-9 _ -
/// .`") and the 64-character limit of the common model APIs.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 128 {
        return Some(format!(
            "{} characters (the spec's rule: 1 to 128)",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Some(format!(
            "the character {c:?} (the spec's rule: A-Z a-z 0-9 _ - .)"
        ));
    }
    if name.len() > MODEL_API_NAME_LIMIT {
        return Some(format!(
            "{} characters (model APIs take at most {MODEL_API_NAME_LIMIT})",
            name.len()
        ));
    }
    None
}

/// One named entry (a tool or a prompt) as served.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    /// The upstream's index in the gateway's list.
    pub member: usize,
    /// The name the upstream gave it.
    pub original: String,
    /// The entry as served: the upstream's, its `name` the served one.
    pub value: Value,
}

/// One entry kept under the upstream's own identity (a resource, a template).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kept {
    /// The upstream's index.
    pub member: usize,
    /// The entry as the upstream listed it.
    pub value: Value,
}

/// Every upstream's entries, merged.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Tools in upstream order, then each upstream's own order.
    pub tools: Vec<Named>,
    /// Prompts, in the same order.
    pub prompts: Vec<Named>,
    /// Resources.
    pub resources: Vec<Kept>,
    /// Resource templates.
    pub templates: Vec<Kept>,
    tool_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
    resource_index: HashMap<String, usize>,
    /// Served names two upstreams (or one, twice) claimed: withheld; each
    /// with the members that claimed it, by index, in order.
    pub clashes: BTreeMap<String, BTreeSet<usize>>,
    /// Resource URIs more than one upstream listed: kept with the first.
    pub shared_uris: BTreeSet<String>,
}

impl Merged {
    /// The tool served as `served`: its upstream and its own name.
    pub(crate) fn tool(&self, served: &str) -> Option<&Named> {
        self.tool_index.get(served).map(|&i| &self.tools[i])
    }

    /// The prompt served as `served`.
    pub(crate) fn prompt(&self, served: &str) -> Option<&Named> {
        self.prompt_index.get(served).map(|&i| &self.prompts[i])
    }

    /// The upstream that listed the resource `uri`, or else the one whose
    /// template's literal start is the longest match of `uri`.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<usize> {
        if let Some(&m) = self.resource_index.get(uri) {
            return Some(m);
        }
        self.templates
            .iter()
            .filter_map(|t| {
                let template = t.value.get("uriTemplate")?.as_str()?;
                let literal = template.split('{').next().unwrap_or("");
                (!literal.is_empty() && uri.starts_with(literal))
                    .then_some((literal.len(), t.member))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, m)| m)
    }
}

/// Merges the upstreams' snapshots (`None`: not listed yet), each under its
/// prefix. A served name claimed twice is withheld from both and reported in
/// [`Merged::clashes`]; a resource URI listed twice is kept by the first.
pub(crate) fn merge(members: &[(Option<&str>, Option<&Snapshot>)]) -> Merged {
    let mut merged = Merged::default();
    let mut tool_count: HashMap<String, usize> = HashMap::new();
    let mut prompt_count: HashMap<String, usize> = HashMap::new();
    for (prefix, snapshot) in members {
        let Some(s) = snapshot else { continue };
        for (list, counts) in [(&s.tools, &mut tool_count), (&s.prompts, &mut prompt_count)] {
            for entry in list {
                if let Some(name) = entry.get("name").and_then(Value::as_str) {
                    *counts.entry(served(*prefix, name)).or_default() += 1;
                }
            }
        }
    }
    for (member, (prefix, snapshot)) in members.iter().enumerate() {
        let Some(s) = snapshot else { continue };
        for (list, counts, out, index) in [
            (
                &s.tools,
                &tool_count,
                &mut merged.tools,
                &mut merged.tool_index,
            ),
            (
                &s.prompts,
                &prompt_count,
                &mut merged.prompts,
                &mut merged.prompt_index,
            ),
        ] {
            for entry in list {
                let Some(name) = entry.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let name_served = served(*prefix, name);
                if counts.get(&name_served).copied().unwrap_or(0) > 1 {
                    merged
                        .clashes
                        .entry(name_served)
                        .or_default()
                        .insert(member);
                    continue;
                }
                let mut value = entry.clone();
                value["name"] = Value::String(name_served.clone());
                index.insert(name_served, out.len());
                out.push(Named {
                    member,
                    original: name.to_owned(),
                    value,
                });
            }
        }
        for entry in &s.resources {
            let Some(uri) = entry.get("uri").and_then(Value::as_str) else {
                continue;
            };
            if merged.resource_index.get(uri).is_some_and(|&m| m != member) {
                merged.shared_uris.insert(uri.to_owned());
                continue;
            }
            if merged.resource_index.contains_key(uri) {
                continue;
            }
            merged.resource_index.insert(uri.to_owned(), member);
            merged.resources.push(Kept {
                member,
                value: entry.clone(),
            });
        }
        for entry in &s.templates {
            merged.templates.push(Kept {
                member,
                value: entry.clone(),
            });
        }
    }
    merged
}

/// A page of `items` from the gateway's own `cursor` (`None`: the first), at
/// most `size` long, and the cursor of the next page. Errors: a cursor this
/// gateway did not issue, or past the end (-32602 for the caller).
pub(crate) fn page<'a, T>(
    items: &'a [T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [T], Option<String>), String> {
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(c)
            .filter(|&n| n <= items.len())
            .ok_or_else(|| format!("invalid cursor {c:?} (not one this gateway issued, or the list shrank past it)"))?,
    };
    let end = (start + size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(end));
    Ok((&items[start..end], next))
}

/// The cursor of the page starting at `offset`: opaque to clients.
fn encode_cursor(offset: usize) -> String {
    format!("sbg1-{offset:x}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    usize::from_str_radix(cursor.strip_prefix("sbg1-")?, 16).ok()
}

/// A list result: `{key: entries, nextCursor?}`.
pub(crate) fn list_result<'a>(
    key: &str,
    entries: impl Iterator<Item = &'a Value>,
    next: Option<String>,
) -> Value {
    let mut m = Map::new();
    m.insert(key.to_owned(), Value::Array(entries.cloned().collect()));
    if let Some(n) = next {
        m.insert("nextCursor".to_owned(), Value::String(n));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(tools: &[&str]) -> Snapshot {
        Snapshot {
            tools: tools
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn names_are_prefixed_and_map_back_to_their_upstream() {
        let (a, b) = (snap(&["echo", "add"]), snap(&["echo"]));
        let m = merge(&[(Some("a"), Some(&a)), (Some("b"), Some(&b))]);
        let names: Vec<&str> = m
            .tools
            .iter()
            .map(|t| t.value["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a__echo", "a__add", "b__echo"]);
        let t = m.tool("b__echo").unwrap();
        assert_eq!((t.member, t.original.as_str()), (1, "echo"));
        assert!(m.tool("echo").is_none());
        assert!(m.clashes.is_empty());
    }

    #[test]
    fn the_same_names_whichever_upstream_is_listed_first() {
        let (a, b) = (snap(&["x"]), snap(&["y"]));
        let only_b = merge(&[(Some("a"), None), (Some("b"), Some(&b))]);
        let both = merge(&[(Some("a"), Some(&a)), (Some("b"), Some(&b))]);
        assert_eq!(only_b.tool("b__y").unwrap().member, 1);
        assert_eq!(both.tool("b__y").unwrap().member, 1);
    }

    #[test]
    fn a_clash_is_withheld_from_both_and_reported() {
        let (a, b) = (snap(&["echo", "only_a"]), snap(&["echo"]));
        let m = merge(&[(None, Some(&a)), (None, Some(&b))]);
        assert!(m.tool("echo").is_none());
        assert_eq!(m.clashes.keys().collect::<Vec<_>>(), ["echo"]);
        assert_eq!(
            m.clashes["echo"].iter().collect::<Vec<_>>(),
            [&0, &1],
            "both named"
        );
        assert_eq!(m.tool("only_a").unwrap().member, 0);
        // Prefixed, the same names do not clash.
        let m = merge(&[(Some("a"), Some(&a)), (Some("b"), Some(&b))]);
        assert!(m.clashes.is_empty());
    }

    #[test]
    fn resources_route_by_where_they_were_listed_or_by_template() {
        let a = Snapshot {
            resources: vec![json!({"uri": "file:///a.txt", "name": "a"})],
            templates: vec![json!({"uriTemplate": "mem://{key}", "name": "m"})],
            ..Snapshot::default()
        };
        let b = Snapshot {
            resources: vec![json!({"uri": "file:///b.txt", "name": "b"})],
            templates: vec![json!({"uriTemplate": "mem://deep/{key}", "name": "d"})],
            ..Snapshot::default()
        };
        let m = merge(&[(Some("a"), Some(&a)), (Some("b"), Some(&b))]);
        assert_eq!(m.resource_owner("file:///b.txt"), Some(1));
        assert_eq!(m.resource_owner("file:///a.txt"), Some(0));
        assert_eq!(m.resource_owner("mem://x"), Some(0));
        assert_eq!(
            m.resource_owner("mem://deep/x"),
            Some(1),
            "the longest literal wins"
        );
        assert_eq!(m.resource_owner("other://x"), None);
        assert!(m.shared_uris.is_empty());
        let m = merge(&[(Some("a"), Some(&a)), (Some("c"), Some(&a))]);
        assert_eq!(
            m.resource_owner("file:///a.txt"),
            Some(0),
            "kept with the first"
        );
        assert_eq!(m.shared_uris.iter().collect::<Vec<_>>(), ["file:///a.txt"]);
    }

    #[test]
    fn pages_walk_every_entry_once_under_our_cursor() {
        let items: Vec<u32> = (0..750).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let (page, next) = page(&items, cursor.as_deref(), 100).unwrap();
            seen.extend_from_slice(page);
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(page(&items, Some("bogus"), 100).is_err());
        assert!(page(&items, Some(&encode_cursor(751)), 100).is_err());
        let (empty, next) = page::<u32>(&[], None, 100).unwrap();
        assert!(empty.is_empty() && next.is_none());
    }

    #[test]
    fn served_names_are_checked_against_the_rules() {
        assert_eq!(name_problem("a__echo"), None);
        assert!(name_problem("a__has space").is_some());
        assert!(name_problem("a__has/slash").is_some());
        assert!(name_problem(&"x".repeat(65)).unwrap().contains("64"));
        assert!(name_problem(&"x".repeat(129)).unwrap().contains("128"));
        assert!(name_problem("").is_some());
    }
}
