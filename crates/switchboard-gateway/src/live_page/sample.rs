//! What the live page shows of the metrics, read from their OpenMetrics
//! text (the very text `/metrics` serves), so that every number on the page
//! is one a scrape would read. Pure: text in, [`Sample`] out.

use std::collections::BTreeMap;

use serde::Serialize;

/// The totals the page shows, as of one render of the metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Sample {
    /// Requests answered downstream (`mcp_server_operation_duration`'s count).
    pub calls: u64,
    /// Of those, answered with an error (any `error_type`, `tool_error` too).
    pub errors: u64,
    /// Of those, `tool_error`.
    pub tool_errors: u64,
    /// `switchboard_requests_refused_total`, all reasons.
    pub refused: u64,
    /// `switchboard_auth_failures_total`, all reasons.
    pub auth_failures: u64,
    /// `switchboard_sessions_open` by transport.
    pub sessions: BTreeMap<String, u64>,
    /// By upstream label.
    pub upstreams: BTreeMap<String, UpstreamSample>,
    /// `switchboard_audit_records`, when a trail is written.
    pub audit_records: Option<u64>,
    /// `switchboard_audit_lost_total`.
    pub audit_lost: u64,
}

/// One upstream's series.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct UpstreamSample {
    /// The state whose `switchboard_upstream_state` is 1.
    pub state: Option<String>,
    /// `switchboard_children_total` by event (started, restarted, crashed).
    pub children: BTreeMap<String, u64>,
    /// `switchboard_upstream_list_entries` by list.
    pub entries: BTreeMap<String, u64>,
    /// `switchboard_upstream_list_size_bytes` by list.
    pub bytes: BTreeMap<String, u64>,
    /// `switchboard_drift_events_total`, all kinds.
    pub drift: u64,
    /// Requests made of it (`mcp_client_operation_duration`'s count).
    pub calls: u64,
    /// Of those, answered with an error.
    pub errors: u64,
}

/// One line of the text: a series' name, its labels and its value.
#[derive(Debug, PartialEq)]
struct Line<'a> {
    name: &'a str,
    labels: Vec<(&'a str, String)>,
    value: f64,
}

impl Line<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one sample line (`name{k="v",…} value [timestamp]`); `None` for a
/// comment, a blank line or one that does not parse.
fn line(text: &str) -> Option<Line<'_>> {
    if text.starts_with('#') || text.trim().is_empty() {
        return None;
    }
    let name_end = text.find(['{', ' '])?;
    let name = &text[..name_end];
    let mut rest = &text[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut s = inner;
        loop {
            s = s.trim_start_matches(',');
            if let Some(after) = s.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = s.find('=')?;
            let key = &s[..eq];
            let mut chars = s[eq + 1..].strip_prefix('"')?.char_indices();
            let mut value = String::new();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.push((key, value));
            s = &s[eq + 1 + 1 + end + 1..];
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Line {
        name,
        labels,
        value,
    })
}

/// The page's totals from the metrics' text (OpenMetrics or the classic
/// format: counters are read with or without `_total`).
pub(crate) fn sample(text: &str) -> Sample {
    let mut s = Sample::default();
    for l in text.lines().filter_map(line) {
        let n = l.value.max(0.0) as u64;
        let upstream = || l.label("upstream").unwrap_or_default().to_owned();
        match l.name.strip_suffix("_total").unwrap_or(l.name) {
            "mcp_server_operation_duration_seconds_count" => {
                s.calls += n;
                match l.label("error_type") {
                    Some("tool_error") => {
                        s.errors += n;
                        s.tool_errors += n;
                    }
                    Some(_) => s.errors += n,
                    None => {}
                }
            }
            "mcp_client_operation_duration_seconds_count" => {
                let u = s.upstreams.entry(upstream()).or_default();
                u.calls += n;
                if l.label("error_type").is_some() {
                    u.errors += n;
                }
            }
            "switchboard_requests_refused" => s.refused += n,
            "switchboard_auth_failures" => s.auth_failures += n,
            "switchboard_sessions_open" => {
                let t = l.label("transport").unwrap_or_default().to_owned();
                *s.sessions.entry(t).or_default() += n;
            }
            "switchboard_children" => {
                let e = l.label("event").unwrap_or_default().to_owned();
                *s.upstreams
                    .entry(upstream())
                    .or_default()
                    .children
                    .entry(e)
                    .or_default() += n;
            }
            "switchboard_upstream_state" if n == 1 => {
                let state = l.label("state").map(str::to_owned);
                s.upstreams.entry(upstream()).or_default().state = state;
            }
            "switchboard_upstream_list_entries" => {
                let list = l.label("list").unwrap_or_default().to_owned();
                s.upstreams
                    .entry(upstream())
                    .or_default()
                    .entries
                    .insert(list, n);
            }
            "switchboard_upstream_list_size_bytes" => {
                let list = l.label("list").unwrap_or_default().to_owned();
                s.upstreams
                    .entry(upstream())
                    .or_default()
                    .bytes
                    .insert(list, n);
            }
            "switchboard_drift_events" => s.upstreams.entry(upstream()).or_default().drift += n,
            "switchboard_audit_records" => s.audit_records = Some(n),
            "switchboard_audit_lost" => s.audit_lost += n,
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_and_without_labels() {
        assert_eq!(
            line(r#"a_total{x="1",y="q\"uo\\te\n"} 3 1700000000"#),
            Some(Line {
                name: "a_total",
                labels: vec![("x", "1".into()), ("y", "q\"uo\\te\n".into())],
                value: 3.0
            })
        );
        assert_eq!(
            line("b 2.5"),
            Some(Line {
                name: "b",
                labels: vec![],
                value: 2.5
            })
        );
        assert_eq!(line(r#"c{x="a,}b"} 1"#).unwrap().label("x"), Some("a,}b"));
        assert_eq!(line("# TYPE a counter"), None);
        assert_eq!(line(""), None);
        assert_eq!(line(r#"d{x="unterminated} 1"#), None);
        assert_eq!(line("e NaNx"), None);
    }

    #[test]
    fn a_real_render_adds_up() {
        let m = crate::metrics::Metrics::new();
        let mut last = crate::metrics::Last::default();
        let op = |outcome| crate::metrics::Operation {
            method: "tools/call",
            tool: None,
            prompt: None,
            outcome,
            version: Some("2025-11-25"),
            transport: "tcp",
            upstream: None,
        };
        let ms = std::time::Duration::from_millis(1);
        m.server_operation(&mut last, op(crate::metrics::Outcome::Ok), ms);
        m.server_operation(&mut last, op(crate::metrics::Outcome::Ok), ms);
        m.server_operation(&mut last, op(crate::metrics::Outcome::ToolError), ms);
        m.server_operation(&mut last, op(crate::metrics::Outcome::code(-32602)), ms);
        let mut up = op(crate::metrics::Outcome::Ok);
        up.upstream = Some(crate::metrics::Name::new("time"));
        m.client_operation(&mut last, up, ms);
        m.refused("time", crate::metrics::Refusal::Allowlist);
        m.session_opened("streamable_http");
        m.child("time", crate::metrics::ChildEvent::Started);
        m.child("time", crate::metrics::ChildEvent::Crashed);
        m.child("time", crate::metrics::ChildEvent::Restarted);
        m.upstream_state("time", 1, "starting");
        m.upstream_state("time", 1, "ready");
        m.list_size("time", "tools", 300, 4);
        m.drift("time", "changed");
        for classic in [false, true] {
            let s = sample(&m.render(classic).0);
            assert_eq!((s.calls, s.errors, s.tool_errors), (4, 2, 1), "{classic}");
            assert_eq!((s.refused, s.auth_failures), (1, 0));
            assert_eq!(s.sessions.get("streamable_http"), Some(&1));
            let u = &s.upstreams["time"];
            assert_eq!(u.state.as_deref(), Some("ready"));
            assert_eq!(u.children.get("restarted"), Some(&1));
            assert_eq!(u.children.get("crashed"), Some(&1));
            assert_eq!(u.entries.get("tools"), Some(&4));
            assert_eq!(u.bytes.get("tools"), Some(&300));
            assert_eq!((u.drift, u.calls, u.errors), (1, 1, 0));
        }
    }
}
