//! The `toolNames` allowlist (`--allow-tool NAME`): what a downstream client may
//! see and call is the intersection of the list with what the upstream server
//! reports (MCP "Server features → Tools": `tools/list`, `tools/call`).
//!
//! - `tools/list` results are filtered to allowed names (the rest of the result,
//!   `nextCursor` and `_meta` included, is kept);
//! - `tools/call` for a name outside the list is refused with -32602 before it
//!   reaches the upstream server;
//! - an allowed name the upstream does not report is drift: logged at start-up and
//!   whenever the list changes ([`Allowlist::drift`]).
//!
//! No allowlist ([`Allowlist::All`], no `--allow-tool` given) allows every tool;
//! [`Allowlist::Only`] allows its names and nothing else, none when it is empty.
//! The choice is a value, never read off an empty set.
//!
//! This module must not know about transports, sessions or children.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use switchboard_protocol::types as t;

use crate::catalog::pin::Kind;
use crate::error::Error;

/// Which tools clients may see and call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Allowlist {
    /// Every tool the upstream reports (no allowlist configured). Default.
    #[default]
    All,
    /// Only these names, intersected with what the upstream reports.
    Only(BTreeSet<String>),
}

/// A drift guard's verdict on one entry (module `catalog::guard`,
/// `DriftGuard::judge`), as [`decide`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Drift {
    /// No drift guard on this upstream.
    Unguarded,
    /// As approved.
    Approved,
    /// Not as approved (new, changed, gone): `why` says how; `block`: the
    /// guard refuses it (block mode), or only tells (warn mode).
    Drifted { why: String, block: bool },
}

/// Why a use of an entry is refused. Each is -32602 in every era (the name
/// is a parameter: MCP "Tools → Error Handling"; [`Error::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Deny {
    /// The request names no entry (`params.name` missing or not a string).
    NoName(Kind),
    /// A tool outside the allowlist: unknown here, as a name nobody lists
    /// is (nothing tells that it exists).
    NotAllowed(String),
    /// Refused by the drift guard (block mode): why.
    Drifted(String),
}

impl std::fmt::Display for Deny {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Deny::NoName(Kind::Prompt) => write!(f, "{} needs params.name", t::PROMPTS_GET),
            Deny::NoName(_) => write!(f, "{} needs params.name", t::TOOLS_CALL),
            Deny::NotAllowed(name) => write!(f, "unknown tool: {name}"),
            Deny::Drifted(why) => f.write_str(why),
        }
    }
}

impl Deny {
    /// Its reason, as the metrics count it.
    pub(crate) fn refusal(&self) -> crate::metrics::Refusal {
        match self {
            Deny::NoName(_) => crate::metrics::Refusal::BadInput,
            Deny::NotAllowed(_) => crate::metrics::Refusal::Allowlist,
            Deny::Drifted(_) => crate::metrics::Refusal::Drift,
        }
    }
}

impl From<Deny> for Error {
    fn from(d: Deny) -> Error {
        Error::Refused(d.refusal(), d.to_string())
    }
}

/// What the policy says of one use of an entry ([`decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// It goes.
    Allow,
    /// It goes, though it drifted: a drift guard in warn mode (the caller
    /// logs and counts it).
    Warn { why: String },
    /// It is refused before any upstream sees it.
    Deny(Deny),
}

/// The one policy decision on a use of an entry (`tools/call`,
/// `prompts/get`) of `kind` named `name`: the allowlist (tools only), then
/// the drift guard's verdict `drift`. Pure; the bridge and the gateway call
/// it once per use. (Per-tool scopes are still checked by the transport,
/// before the request reaches a session: HTTP 403.)
pub(crate) fn decide(allow: &Allowlist, kind: Kind, name: Option<&str>, drift: Drift) -> Decision {
    let Some(name) = name else {
        return Decision::Deny(Deny::NoName(kind));
    };
    if kind == Kind::Tool && !allow.permits(name) {
        return Decision::Deny(Deny::NotAllowed(name.to_owned()));
    }
    match drift {
        Drift::Unguarded | Drift::Approved => Decision::Allow,
        Drift::Drifted { why, block: false } => Decision::Warn { why },
        Drift::Drifted { why, block: true } => Decision::Deny(Deny::Drifted(why)),
    }
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
}

/// The `name` of a `tools/call` or `prompts/get` request's params (`None`:
/// no params, not an object, or no string `name`). Only `name` is read; the
/// arguments are skipped, not kept.
pub(crate) fn params_name(params: Option<&RawValue>) -> Option<std::borrow::Cow<'_, str>> {
    params
        .and_then(|p| serde_json::from_str::<Named<'_>>(p.get()).ok())
        .and_then(|n| n.name)
}

impl Allowlist {
    /// An allowlist of exactly `names`; an empty `names` allows nothing.
    pub fn only<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        Allowlist::Only(names.into_iter().map(Into::into).collect())
    }

    /// The names allowed; `None`: every name.
    pub(crate) fn names(&self) -> Option<&BTreeSet<String>> {
        match self {
            Allowlist::All => None,
            Allowlist::Only(names) => Some(names),
        }
    }

    /// Whether the list restricts anything.
    pub fn is_restricted(&self) -> bool {
        matches!(self, Allowlist::Only(_))
    }

    /// Whether tool `name` may be listed and called.
    pub fn permits(&self, name: &str) -> bool {
        match self {
            Allowlist::All => true,
            Allowlist::Only(names) => names.contains(name),
        }
    }

    /// A `tools/list` result with the tools outside the list removed; unchanged
    /// (not even parsed) when nothing is restricted, or when it is not an object
    /// with a `tools` array.
    pub fn filter_list_result(&self, result: Box<RawValue>) -> Box<RawValue> {
        if !self.is_restricted() {
            return result;
        }
        /// A tool's name, all this needs of it.
        #[derive(serde::Deserialize)]
        struct Named<'a> {
            #[serde(borrow)]
            name: Option<std::borrow::Cow<'a, str>>,
        }
        let permitted = |tool: &RawValue| {
            serde_json::from_str::<Named>(tool.get())
                .ok()
                .and_then(|t| t.name)
                .is_some_and(|n| self.permits(&n))
        };
        crate::raw::retain_items(&result, "tools", permitted).unwrap_or(result)
    }

    /// The allowed names missing from `reported` (the names the upstream lists).
    pub fn drift<'a>(&'a self, reported: &BTreeSet<String>) -> Vec<&'a str> {
        let Allowlist::Only(names) = self else {
            return Vec::new();
        };
        names
            .iter()
            .filter(|n| !reported.contains(*n))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::raw;
    use serde_json::Value;

    fn check_call(a: &Allowlist, params: Option<&RawValue>) -> Result<(), Error> {
        match decide(
            a,
            Kind::Tool,
            params_name(params).as_deref(),
            Drift::Unguarded,
        ) {
            Decision::Allow => Ok(()),
            Decision::Warn { why } => panic!("no guard, no warning: {why}"),
            Decision::Deny(d) => Err(d.into()),
        }
    }

    #[test]
    fn no_list_allows_everything_and_leaves_results_alone() {
        let a = Allowlist::default();
        assert_eq!(a, Allowlist::All);
        assert!(a.permits("anything"));
        let text = r#"{"tools":[{"name":"a"}],"nextCursor":"c"}"#;
        assert_eq!(a.filter_list_result(raw(text)).get(), text);
        assert!(check_call(&a, Some(&raw(r#"{"name":"zzz"}"#))).is_ok());
    }

    #[test]
    fn lists_are_intersected_and_calls_refused() {
        let a = Allowlist::only(["echo", "missing"]);
        let out = a.filter_list_result(raw(
            r#"{"tools":[{"name":"echo","inputSchema":{}},{"name":"rm"}],"nextCursor":"c"}"#,
        ));
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["tools"][0]["name"], "echo");
        assert_eq!(v["nextCursor"], "c");
        assert!(check_call(&a, Some(&raw(r#"{"name":"echo","arguments":{}}"#))).is_ok());
        let err = check_call(&a, Some(&raw(r#"{"name":"rm"}"#))).unwrap_err();
        assert!(err.to_string().contains("rm"));
        assert!(check_call(&a, None).is_err());
        let reported: BTreeSet<String> = ["echo".to_owned(), "rm".to_owned()].into();
        assert_eq!(a.drift(&reported), vec!["missing"]);
    }

    /// An empty `Only` is a list of nothing, not a list of everything.
    #[test]
    fn an_empty_only_list_allows_nothing() {
        let a = Allowlist::only(Vec::<String>::new());
        assert!(!a.permits("echo"));
        assert_eq!(
            a.filter_list_result(raw(r#"{"tools":[{"name":"echo"}]}"#))
                .get(),
            r#"{"tools":[]}"#
        );
        let err = check_call(&a, Some(&raw(r#"{"name":"echo"}"#))).unwrap_err();
        assert_eq!(err.code(), -32602);
    }

    /// Every combination of allowed or not, approved, drifted (warn or
    /// block) or unguarded, named or not, for tools and prompts: the one
    /// decision, and each refusal's answer (-32602 in every era: the bridge
    /// and the gateway answer a 2026-07-28 request and a session's alike).
    #[test]
    fn one_decision_composes_allowlist_and_drift() {
        let drifted = |block| Drift::Drifted {
            why: "tool \"x\" changed".into(),
            block,
        };
        let only_x = Allowlist::only(["x"]);
        let all = Allowlist::All;
        use Decision::{Allow, Warn};
        let refused = Decision::Deny;
        let warn = || Warn {
            why: "tool \"x\" changed".into(),
        };
        let table: Vec<(&Allowlist, Kind, Option<&str>, Drift, Decision)> = vec![
            // Unguarded: the allowlist alone.
            (&all, Kind::Tool, Some("x"), Drift::Unguarded, Allow),
            (&only_x, Kind::Tool, Some("x"), Drift::Unguarded, Allow),
            (
                &only_x,
                Kind::Tool,
                Some("y"),
                Drift::Unguarded,
                refused(Deny::NotAllowed("y".into())),
            ),
            // Approved.
            (&all, Kind::Tool, Some("x"), Drift::Approved, Allow),
            (&only_x, Kind::Tool, Some("x"), Drift::Approved, Allow),
            (
                &only_x,
                Kind::Tool,
                Some("y"),
                Drift::Approved,
                refused(Deny::NotAllowed("y".into())),
            ),
            // Drifted, warn mode: served, told.
            (&all, Kind::Tool, Some("x"), drifted(false), warn()),
            (&only_x, Kind::Tool, Some("x"), drifted(false), warn()),
            // Drifted, block mode: refused; outside the allowlist it is
            // unknown, drifted or not (nothing of the lock is told).
            (
                &all,
                Kind::Tool,
                Some("x"),
                drifted(true),
                refused(Deny::Drifted("tool \"x\" changed".into())),
            ),
            (
                &only_x,
                Kind::Tool,
                Some("y"),
                drifted(true),
                refused(Deny::NotAllowed("y".into())),
            ),
            // No name: refused before anything else.
            (
                &all,
                Kind::Tool,
                None,
                Drift::Unguarded,
                refused(Deny::NoName(Kind::Tool)),
            ),
            (
                &only_x,
                Kind::Tool,
                None,
                drifted(true),
                refused(Deny::NoName(Kind::Tool)),
            ),
            // Prompts: no allowlist, the guard alone.
            (&only_x, Kind::Prompt, Some("p"), Drift::Unguarded, Allow),
            (&only_x, Kind::Prompt, Some("p"), drifted(false), warn()),
            (
                &only_x,
                Kind::Prompt,
                Some("p"),
                drifted(true),
                refused(Deny::Drifted("tool \"x\" changed".into())),
            ),
            (
                &all,
                Kind::Prompt,
                None,
                Drift::Approved,
                refused(Deny::NoName(Kind::Prompt)),
            ),
        ];
        for (allow, kind, name, drift, expected) in table {
            let case = format!("{allow:?} {kind:?} {name:?} {drift:?}");
            let decision = decide(allow, kind, name, drift);
            assert_eq!(decision, expected, "{case}");
            if let Decision::Deny(d) = decision {
                let error: Error = d.clone().into();
                assert_eq!(error.code(), -32602, "{case}");
                let said = error.to_string();
                match &d {
                    Deny::NoName(Kind::Prompt) => assert_eq!(said, "prompts/get needs params.name"),
                    Deny::NoName(_) => assert_eq!(said, "tools/call needs params.name"),
                    Deny::NotAllowed(n) => assert_eq!(said, format!("unknown tool: {n}")),
                    Deny::Drifted(why) => assert_eq!(&said, why),
                }
            }
        }
    }

    /// The tools kept and the other members are the child's own text: numbers
    /// beyond `f64`, `-0`, escapes; a tool without a readable name goes.
    #[test]
    fn a_filtered_list_keeps_what_it_keeps_as_written() {
        let a = Allowlist::only(["écho", "big"]);
        let text = r#"{"tools":[{"name":"\u00e9cho","x":1.50},{"name":"rm"},{"name":"big","inputSchema":{"maximum":123456789012345678901234567890}},7,{"name":3}],"nextCursor":-0,"_meta":{"n":1e400}}"#;
        assert_eq!(
            a.filter_list_result(raw(text)).get(),
            r#"{"tools":[{"name":"\u00e9cho","x":1.50},{"name":"big","inputSchema":{"maximum":123456789012345678901234567890}}],"nextCursor":-0,"_meta":{"n":1e400}}"#
        );
    }
}
