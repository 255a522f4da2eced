//! The `auth` tables of the gateway's configuration file: the top-level one
//! (the global settings) and each route's (`[routes.X] auth = { ... }`, or
//! `auth = false`), read into [`AuthConfig`]s and [`RouteAuth`]s with every
//! problem placed at its key.
//!
//! The rules: a route without an `auth` key is protected by the global
//! settings (the top-level table, else the command line's `--auth-*` flags),
//! sharing their one resource; `auth = false` leaves it open; a table makes
//! it a protected resource of its own: it must name its `resource`, and every
//! other key it leaves out is the top-level table's (never the flags').
//! Resources are distinct. Client secrets are never in the file: only the
//! name of the environment variable holding one, which must be set.
//!
//! This module must not know how a resource server checks tokens: the
//! transport's `ResourceServer::new` judges the URLs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use switchboard_transport::http::resource::{
    ConfigError, IntrospectionConfig, ResourceServer, ResourceServerConfig,
};

use super::source::pointer_token;
use super::{Env, Problems, DEFAULT_ROUTE_PATH};

/// MCP authorization settings, validated: the top-level table's (where
/// `resource` may be absent when no route uses it) or a route's own, merged
/// over the top-level one (`resource` always set).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuthConfig {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The canonical URI of the protected resource (RFC 8707).
    pub resource: Option<String>,
    /// The JWK set URL; `None`: the issuer's metadata names it.
    pub jwks: Option<String>,
    /// Scopes every request needs.
    pub scopes: Vec<String>,
    /// Scopes a `tools/call` of a served tool needs besides [`Self::scopes`].
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// RFC 7662 introspection of opaque tokens.
    pub introspection: Option<Introspection>,
}

/// Where and as whom opaque tokens are introspected; the secret is read from
/// `client_secret_env` when the gateway starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Introspection {
    pub endpoint: String,
    pub client_id: String,
    pub client_secret_env: String,
    /// Whether an answer without `aud` is accepted (default: refused).
    pub accept_missing_audience: bool,
}

/// How a route is protected.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RouteAuth {
    /// No `auth` key: the global settings (the top-level table, else the
    /// `--auth-*` flags; open without either).
    Global,
    /// `auth = false`: open, no metadata served.
    Off,
    /// A table: its own protected resource.
    Own(AuthConfig),
}

impl AuthConfig {
    /// The transport's configuration, the client secret read with `var`.
    /// Errors: the variable unset or empty (one line).
    pub fn resource_config(
        &self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<ResourceServerConfig, String> {
        let mut c = ResourceServerConfig::new(
            self.issuer.clone(),
            self.resource.clone().unwrap_or_default(),
        );
        c.jwks_url = self.jwks.clone();
        c.scopes = self.scopes.clone();
        c.tool_scopes = self.tool_scopes.clone();
        if let Some(i) = &self.introspection {
            let secret = var(&i.client_secret_env)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    format!(
                        "the environment variable {} (the introspection client secret) is not set",
                        i.client_secret_env
                    )
                })?;
            let mut ic = IntrospectionConfig::new(i.endpoint.clone(), i.client_id.clone(), secret);
            ic.accept_missing_audience = i.accept_missing_audience;
            c.introspection = Some(ic);
        }
        Ok(c)
    }
}

/// An `auth` table as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAuth {
    issuer: Option<String>,
    resource: Option<String>,
    jwks: Option<String>,
    scopes: Option<Vec<String>>,
    tool_scopes: Option<BTreeMap<String, Vec<String>>>,
    introspection: Option<FileIntrospection>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIntrospection {
    endpoint: String,
    client_id: String,
    client_secret_env: String,
    #[serde(default)]
    accept_missing_audience: bool,
}

/// A route's `auth` as written: `false` or a table (the schema refuses
/// `true`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum FileRouteAuth {
    Switch(bool),
    Table(Box<FileAuth>),
}

/// Checks what one table says by itself, each problem at its key under `at`
/// (a JSON pointer): its URLs (as the transport judges them), its tool
/// scopes' names, its secret's variable.
fn check_table(table: &FileAuth, at: &str, problems: &mut Problems<'_>, env: &Env) {
    // Each URL alone, beside stand-ins that are never served, so that every
    // bad one is reported at its own key.
    let base = ResourceServerConfig::new("https://issuer.invalid", "https://resource.invalid/mcp");
    let mut trials: Vec<(&str, ResourceServerConfig)> = Vec::new();
    if let Some(i) = &table.issuer {
        let mut t = base.clone();
        t.issuer = i.clone();
        trials.push(("issuer", t));
    }
    if let Some(r) = &table.resource {
        let mut t = base.clone();
        t.resource = r.clone();
        trials.push(("resource", t));
    }
    if let Some(j) = &table.jwks {
        let mut t = base.clone();
        t.jwks_url = Some(j.clone());
        trials.push(("jwks", t));
    }
    if let Some(i) = &table.introspection {
        let mut t = base.clone();
        t.introspection = Some(IntrospectionConfig::new(i.endpoint.clone(), "", ""));
        trials.push(("introspection/endpoint", t));
    }
    for (key, trial) in trials {
        match ResourceServer::new(trial, DEFAULT_ROUTE_PATH) {
            Ok(_) => {}
            Err(e) => problems.push(&format!("{at}/{key}"), message(&e)),
        }
    }
    for (tool, scopes) in table.tool_scopes.iter().flatten() {
        let tat = format!("{at}/tool_scopes/{}", pointer_token(tool));
        if scopes.is_empty() {
            problems.push(
                &tat,
                "an empty list asks for nothing: give a scope or leave the tool out",
            );
        }
    }
    if let Some(i) = &table.introspection {
        if (env.var)(&i.client_secret_env).is_none_or(|v| v.is_empty()) {
            problems.push(
                &format!("{at}/introspection/client_secret_env"),
                format!(
                    "the environment variable {} is not set",
                    i.client_secret_env
                ),
            );
        }
    }
}

/// The transport's refusal, in the file's words (the key is in the place).
fn message(e: &ConfigError) -> String {
    match e {
        ConfigError::Url { url, .. } => format!("{url:?} is not an absolute http(s) URL"),
        ConfigError::Insecure { url, .. } => {
            format!(
                "{url:?} must use https (http only on the loopback: 127.0.0.1, [::1], localhost)"
            )
        }
        ConfigError::Fragment(url) => format!("{url:?}: a resource URI has no fragment (RFC 8707)"),
        other => switchboard_transport::error_chain(other),
    }
}

/// `own` over `global`, key by key (`resource` never inherited).
fn merged(global: Option<&FileAuth>, own: &FileAuth) -> FileAuth {
    let g = global.cloned().unwrap_or_default();
    FileAuth {
        issuer: own.issuer.clone().or(g.issuer),
        resource: own.resource.clone(),
        jwks: own.jwks.clone().or(g.jwks),
        scopes: own.scopes.clone().or(g.scopes),
        tool_scopes: own.tool_scopes.clone().or(g.tool_scopes),
        introspection: own.introspection.clone().or(g.introspection),
    }
}

fn settings(table: FileAuth) -> Option<AuthConfig> {
    Some(AuthConfig {
        issuer: table.issuer?,
        resource: table.resource,
        jwks: table.jwks,
        scopes: table.scopes.unwrap_or_default(),
        tool_scopes: table.tool_scopes.unwrap_or_default(),
        introspection: table.introspection.map(|i| Introspection {
            endpoint: i.endpoint,
            client_id: i.client_id,
            client_secret_env: i.client_secret_env,
            accept_missing_audience: i.accept_missing_audience,
        }),
    })
}

/// The global settings and each route's (`routes`: each route's name and
/// `auth` as written; the answer in the same order), every problem pushed. `None` for the global
/// settings when the file has no top-level table (or a broken one).
pub(super) fn resolve(
    global: Option<FileAuth>,
    routes: &[(String, Option<FileRouteAuth>)],
    problems: &mut Problems<'_>,
    env: &Env,
) -> (Option<AuthConfig>, Vec<RouteAuth>) {
    if let Some(g) = &global {
        check_table(g, "/auth", problems, env);
        if g.issuer.is_none() {
            problems.push(
                "/auth",
                "needs `issuer`: the authorization server's issuer identifier",
            );
        }
    }
    // Who protects which resource, to find one claimed twice.
    let mut resources: BTreeMap<String, String> = BTreeMap::new();
    let mut inheriting: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(routes.len());
    for (name, auth) in routes {
        let at = format!("/routes/{}/auth", pointer_token(name));
        out.push(match auth {
            None => {
                inheriting.push(name);
                RouteAuth::Global
            }
            Some(FileRouteAuth::Switch(false)) => RouteAuth::Off,
            Some(FileRouteAuth::Switch(true)) => {
                problems.push(&at, "`true` is not a setting: give a table, or `false` (open)");
                RouteAuth::Global
            }
            Some(FileRouteAuth::Table(own)) => {
                check_table(own, &at, problems, env);
                let m = merged(global.as_ref(), own);
                if m.issuer.is_none() {
                    problems.push(
                        &at,
                        "no `issuer`: set it here or in the top-level [auth] table (the --auth-* flags apply only to routes without an auth table)",
                    );
                }
                match &m.resource {
                    None => problems.push(
                        &at,
                        "needs `resource`: a route with an auth table is its own protected resource, with its own canonical URI",
                    ),
                    Some(r) => {
                        if let Some(other) = resources.insert(r.clone(), format!("route {name:?}")) {
                            problems.push(
                                &format!("{at}/resource"),
                                format!("{r:?} is also the resource of {other}: each protected resource has its own URI"),
                            );
                        }
                    }
                }
                settings(m).map_or(RouteAuth::Global, RouteAuth::Own)
            }
        });
    }
    let global = global.and_then(settings);
    if let Some(g) = &global {
        match &g.resource {
            None if !inheriting.is_empty() => problems.push(
                "/auth",
                format!(
                    "needs `resource`: the routes without an auth table of their own ({}) are protected by this one",
                    inheriting.join(", ")
                ),
            ),
            Some(r) if !inheriting.is_empty() => {
                if let Some(other) = resources.get(r) {
                    problems.push(
                        "/auth/resource",
                        format!("{r:?} is also the resource of {other}: each protected resource has its own URI"),
                    );
                }
            }
            _ => {}
        }
    }
    (global, out)
}
