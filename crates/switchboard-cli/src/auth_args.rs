//! The `--auth-*` flags of `switchboard bridge` and `switchboard example-server
//! --http`: MCP authorization on the server side (the transport's
//! `http::resource`), turned into a `ResourceServerConfig` for
//! `HttpServerConfig::auth`. No protocol logic here; the client secret is read
//! from the environment variable named, never from the command line.

use switchboard_transport::http::resource::{
    IntrospectionConfig, ResourceServer, ResourceServerConfig,
};

/// The `--auth-*` flags (flattened into each command that serves HTTP).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct AuthArgs {
    /// Require OAuth access tokens issued by this authorization server (its
    /// issuer identifier, e.g. `https://auth.example.com`): `iss` must equal
    /// it. Needs `--auth-resource`. Protected Resource Metadata is then served
    /// at `/.well-known/oauth-protected-resource/<path>`.
    #[arg(
        long,
        value_name = "URL",
        requires = "auth_resource",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_issuer: Option<String>,
    /// This server's canonical URI as clients reach it (e.g.
    /// `https://mcp.example.com/mcp`): tokens' `aud` must contain it, and the
    /// metadata's `resource` is it, exactly.
    #[arg(
        long,
        value_name = "URI",
        requires = "auth_issuer",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_resource: Option<String>,
    /// The issuer's JWK set URL (default: the `jwks_uri` of its RFC 8414 or
    /// OpenID Connect metadata).
    #[arg(
        long,
        value_name = "URL",
        requires = "auth_issuer",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_jwks: Option<String>,
    /// A scope every request needs (repeatable); also advertised in the
    /// metadata and the 401 challenge.
    #[arg(
        long = "auth-scope",
        value_name = "SCOPE",
        requires = "auth_issuer",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_scopes: Vec<String>,
    /// A scope that calls of one tool need besides `--auth-scope`
    /// (`TOOL=SCOPE`, repeatable): a `tools/call` of TOOL by a token without
    /// it gets 403 `insufficient_scope` naming it (step-up).
    #[arg(
        long = "auth-tool-scope",
        value_name = "TOOL=SCOPE",
        requires = "auth_issuer",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_tool_scopes: Vec<String>,
    /// Check tokens that are not JWTs at this RFC 7662 introspection endpoint
    /// (needs `--auth-client-id` and `--auth-client-secret-env`).
    #[arg(long, value_name = "URL", requires_all = ["auth_issuer", "auth_client_id", "auth_client_secret_env"], help_heading = "Authorization (OAuth resource server)")]
    pub auth_introspect: Option<String>,
    /// This server's client id at the authorization server (introspection).
    #[arg(
        long,
        value_name = "ID",
        requires = "auth_introspect",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_client_id: Option<String>,
    /// The environment variable holding this server's client secret
    /// (introspection).
    #[arg(
        long,
        value_name = "VAR",
        requires = "auth_introspect",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_client_secret_env: Option<String>,
    /// Accept an introspection answer without `aud` (by default refused:
    /// nothing then shows the token was issued for this resource); an `aud`
    /// that is present must contain `--auth-resource` either way.
    #[arg(
        long,
        requires = "auth_introspect",
        help_heading = "Authorization (OAuth resource server)"
    )]
    pub auth_accept_missing_aud: bool,
}

impl AuthArgs {
    /// The resource server configuration for an endpoint at `path`, checked
    /// (`None` without `--auth-issuer`); `Err` is the one line to print.
    pub fn resource_config(&self, path: &str) -> Result<Option<ResourceServerConfig>, String> {
        self.resource_config_with(path, |var| std::env::var(var).ok())
    }

    fn resource_config_with(
        &self,
        path: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ResourceServerConfig>, String> {
        let (Some(issuer), Some(resource)) = (&self.auth_issuer, &self.auth_resource) else {
            return Ok(None);
        };
        let mut config = ResourceServerConfig::new(issuer.clone(), resource.clone());
        config.jwks_url = self.auth_jwks.clone();
        config.scopes = self.auth_scopes.clone();
        for pair in &self.auth_tool_scopes {
            let (tool, scope) = pair
                .split_once('=')
                .filter(|(t, s)| !t.is_empty() && !s.is_empty() && !s.contains(' '))
                .ok_or_else(|| format!("--auth-tool-scope needs TOOL=SCOPE, got {pair:?}"))?;
            config
                .tool_scopes
                .entry(tool.to_owned())
                .or_default()
                .push(scope.to_owned());
        }
        if let Some(endpoint) = &self.auth_introspect {
            let (Some(client_id), Some(var)) = (&self.auth_client_id, &self.auth_client_secret_env)
            else {
                return Err(
                    "--auth-introspect needs --auth-client-id and --auth-client-secret-env".into(),
                );
            };
            let client_secret = env(var).filter(|s| !s.is_empty()).ok_or_else(|| {
                format!("--auth-client-secret-env: the environment variable {var} is not set")
            })?;
            let mut introspection =
                IntrospectionConfig::new(endpoint.clone(), client_id.clone(), client_secret);
            introspection.accept_missing_audience = self.auth_accept_missing_aud;
            config.introspection = Some(introspection);
        }
        ResourceServer::new(config.clone(), path)
            .map_err(|e| format!("--auth-*: {}", switchboard_transport::error_chain(&e)))?;
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(issuer: &str, resource: &str) -> AuthArgs {
        AuthArgs {
            auth_issuer: Some(issuer.into()),
            auth_resource: Some(resource.into()),
            ..AuthArgs::default()
        }
    }

    #[test]
    fn flags_become_a_checked_configuration() {
        assert!(AuthArgs::default()
            .resource_config("/mcp")
            .unwrap()
            .is_none());
        let mut a = args("https://as.example", "https://mcp.example/mcp");
        a.auth_scopes = vec!["mcp".into()];
        let c = a.resource_config("/mcp").unwrap().unwrap();
        assert_eq!(c.scopes, vec!["mcp"]);
        assert!(c.introspection.is_none());

        let e = args("http://as.example", "https://mcp.example/mcp")
            .resource_config("/mcp")
            .unwrap_err();
        assert!(e.contains("must use https"), "{e}");

        let mut a = args("https://as.example", "https://mcp.example/mcp");
        a.auth_introspect = Some("https://as.example/introspect".into());
        a.auth_client_id = Some("rs".into());
        a.auth_client_secret_env = Some("RS_SECRET".into());
        let e = a.resource_config_with("/mcp", |_| None).unwrap_err();
        assert!(e.contains("RS_SECRET is not set"), "{e}");
        let c = a
            .resource_config_with("/mcp", |v| (v == "RS_SECRET").then(|| "s3".to_owned()))
            .unwrap()
            .unwrap();
        let introspection = c.introspection.unwrap();
        assert_eq!(introspection.client_secret, "s3");
        assert!(
            !introspection.accept_missing_audience,
            "strict unless asked"
        );
        a.auth_accept_missing_aud = true;
        let c = a
            .resource_config_with("/mcp", |_| Some("s3".to_owned()))
            .unwrap()
            .unwrap();
        assert!(c.introspection.unwrap().accept_missing_audience);
    }

    #[test]
    fn tool_scopes_are_tool_equals_scope_pairs() {
        let mut a = args("https://as.example", "https://mcp.example/mcp");
        a.auth_tool_scopes = vec![
            "rm=files:write".into(),
            "rm=admin".into(),
            "ls=files:read".into(),
        ];
        let c = a.resource_config("/mcp").unwrap().unwrap();
        assert_eq!(c.tool_scopes["rm"], vec!["files:write", "admin"]);
        assert_eq!(c.tool_scopes["ls"], vec!["files:read"]);
        for bad in ["rm", "=x", "rm=", "rm=a b"] {
            let mut a = args("https://as.example", "https://mcp.example/mcp");
            a.auth_tool_scopes = vec![bad.into()];
            let e = a.resource_config("/mcp").unwrap_err();
            assert!(e.contains("TOOL=SCOPE"), "{bad}: {e}");
        }
    }
}
