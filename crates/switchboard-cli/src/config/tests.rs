use super::*;

/// An environment with `TOKEN` set and only `/run/secret` readable.
fn env() -> Env {
    Env {
        var: Box::new(|name| (name == "TOKEN").then(|| "t".to_owned())),
        readable: Box::new(|path| {
            if path == Path::new("/run/secret") {
                Ok(())
            } else {
                Err("No such file or directory".to_owned())
            }
        }),
    }
}

fn ok(text: &str, format: Format) -> GatewayConfig {
    parse(text, format, &env()).unwrap_or_else(|p| panic!("{p:#?}"))
}

fn problems(text: &str, format: Format) -> Vec<String> {
    match parse(text, format, &env()) {
        Ok(c) => panic!("accepted: {c:#?}"),
        Err(p) => p.iter().map(|p| p.to_string()).collect(),
    }
}

const FULL: &str = r#"
listen = "127.0.0.1:9090"

[upstreams.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
child = "per-session"

[upstreams.everything]
url = "http://127.0.0.1:3001/mcp"
transport = "streamable-http"
timeout = "500ms"
prefix = "ev"
headers = { Authorization = { env = "TOKEN" }, X-Team = "tools", X-Key = { file = "/run/secret" } }

[routes.review]
path = "/agents/review/mcp"
upstreams = ["time"]
tools = ["time__get_current_time"]
"#;

#[test]
fn the_own_shape_in_toml() {
    let c = ok(FULL, Format::Toml);
    assert_eq!(c.listen, Some("127.0.0.1:9090".parse().unwrap()));
    let names: Vec<_> = c.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["everything", "time"]);
    let ev = &c.upstreams[0];
    assert_eq!(ev.prefix.as_deref(), Some("ev"));
    assert_eq!(ev.list_timeout, Duration::from_millis(500));
    assert_eq!(
        ev.target,
        Target::Http {
            url: "http://127.0.0.1:3001/mcp".into(),
            transport: HttpTransport::StreamableHttp,
            headers: vec![
                ("Authorization".into(), HeaderSource::Env("TOKEN".into())),
                ("X-Key".into(), HeaderSource::File("/run/secret".into())),
                ("X-Team".into(), HeaderSource::Value("tools".into())),
            ],
        }
    );
    let time = &c.upstreams[1];
    assert_eq!(time.prefix.as_deref(), Some("time"));
    assert_eq!(time.list_timeout, DEFAULT_LIST_TIMEOUT);
    assert!(matches!(
        &time.target,
        Target::Stdio { command, child: ChildMode::PerSession, env, .. }
            if command == "mcp-server-time" && env["TZ"] == "UTC"
    ));
    // The named route, and the default route with every upstream.
    let paths: Vec<_> = c.routes.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/agents/review/mcp", "/mcp"]);
    assert_eq!(c.routes[0].upstreams, ["time"]);
    assert_eq!(
        c.routes[0].tools,
        Allow::Only(["time__get_current_time".to_owned()].into())
    );
    assert_eq!(c.routes[1].upstreams, ["everything", "time"]);
    assert_eq!(c.routes[1].tools, Allow::All);
}

#[test]
fn the_same_configuration_in_yaml_and_json() {
    let yaml = r#"
listen: 127.0.0.1:9090
upstreams:
  time:
    command: mcp-server-time
    args: ["--local-timezone", "UTC"]
    env: { TZ: UTC }
    child: per-session
  everything:
    url: http://127.0.0.1:3001/mcp
    transport: streamable-http
    timeout: 500ms
    prefix: ev
    headers:
      Authorization: { env: TOKEN }
      X-Team: tools
      X-Key: { file: /run/secret }
routes:
  review:
    path: /agents/review/mcp
    upstreams: [time]
    tools: [time__get_current_time]
"#;
    let toml = ok(FULL, Format::Toml);
    assert_eq!(ok(yaml, Format::Yaml), toml);
    let json = serde_json::to_string(&Source::parse(FULL, Format::Toml).unwrap().value).unwrap();
    assert_eq!(ok(&json, Format::Json), toml);
}

#[test]
fn a_route_at_mcp_replaces_the_default_route() {
    let c = ok(
        "[upstreams.a]\ncommand = \"x\"\n[upstreams.b]\ncommand = \"y\"\n\
         [routes.main]\npath = \"/mcp\"\nupstreams = [\"a\"]\n",
        Format::Toml,
    );
    assert_eq!(c.routes.len(), 1);
    assert_eq!(c.routes[0].upstreams, ["a"]);
}

#[test]
fn every_problem_is_reported_with_its_place() {
    let text = r#"
lisen = "x"

[upstreams.a]
command = "x"
args = "not a list"
colour = "blue"

[upstreams.b]
url = 7
"#;
    let p = problems(text, Format::Toml);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(
        p.iter().any(|l| l.starts_with("2:9: lisen: unknown key")),
        "{p:#?}"
    );
    assert!(
        p.iter().any(|l| l.starts_with("6:8: upstreams.a.args: ")),
        "{p:#?}"
    );
    assert!(
        p.iter()
            .any(|l| l.starts_with("7:10: upstreams.a.colour: unknown key")),
        "{p:#?}"
    );
    assert!(
        p.iter().any(|l| l.starts_with("10:7: upstreams.b.url: ")),
        "{p:#?}"
    );
}

#[test]
fn cross_checks() {
    let text = r#"
listen = "localhost"

[upstreams.a]
command = "x"
url = "http://h/mcp"

[upstreams.b]
url = "ftp://h/mcp"
args = ["p"]
headers = { Mcp-Session-Id = "s", Authorization = { env = "NOPE" }, K = { file = "/nope" } }

[upstreams.c]
command = "y"
transport = "sse"
timeout = "0s"

[upstreams.d]
command = "z"
prefix = "c"

[upstreams.e__f]
command = "z"

[routes.r1]
path = "/healthz"
upstreams = ["c", "zz"]
tools = ["c__ok", "d__not_served"]

[routes.r2]
path = "/healthz"
upstreams = []
"#;
    let p = problems(text, Format::Toml);
    let expect = [
        "2:10: listen: \"localhost\" is not an IP:PORT address",
        "4:1: upstreams.a: has both `command` (stdio) and `url`",
        "10:8: upstreams.b.args: applies to stdio upstreams",
        "9:7: upstreams.b.url: is not an absolute http(s) URL",
        "11:59: upstreams.b.headers.Authorization.env: the environment variable NOPE is not set",
        "11:82: upstreams.b.headers.K.file: cannot read /nope",
        "11:30: upstreams.b.headers.Mcp-Session-Id: header \"Mcp-Session-Id\" is set by the MCP HTTP transport",
        "15:13: upstreams.c.transport: applies to HTTP upstreams",
        "16:11: upstreams.c.timeout: a timeout of zero",
        "upstreams.e__f: the name \"e__f\" must be",
        "upstreams.d: its prefix \"c\" is also upstream \"c\"'s",
        "routes.r1.path: /healthz is the gateway's own probe",
        "routes.r1.upstreams[1]: no upstream is named \"zz\"",
        "routes.r1.tools[1]: no upstream of this route serves \"d__not_served\"",
        "routes.r2.path: /healthz is also the path of route \"r1\"",
        "routes.r2.upstreams: an empty list serves nothing",
    ];
    for e in expect {
        assert!(p.iter().any(|l| l.contains(e)), "missing {e:?} in {p:#?}");
    }
    assert_eq!(p.len(), expect.len() + 1, "{p:#?}"); // + r2's probe path
}

#[test]
fn an_upstream_needs_a_command_or_a_url() {
    let p = problems("[upstreams.a]\nprefix = \"\"\n", Format::Toml);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].ends_with("upstreams.a: needs `command` (a stdio server) or `url` (an HTTP server)"),
        "{p:?}"
    );
    assert!(problems("upstreams = {}\n", Format::Toml)[0].contains("upstreams"));
    assert!(problems("[routes]\n", Format::Toml)[0].contains("\"upstreams\" is a required"));
}

#[test]
fn an_empty_prefix_serves_names_unprefixed_and_two_may_share_it() {
    let c = ok(
        "[upstreams.a]\ncommand = \"x\"\nprefix = \"\"\n[upstreams.b]\ncommand = \"y\"\nprefix = \"\"\n\
         [routes.r]\npath = \"/r\"\ntools = [\"anything\"]\n",
        Format::Toml,
    );
    assert_eq!(c.upstreams[0].prefix, None);
    assert_eq!(
        c.routes[1].tools,
        Allow::Only(["anything".to_owned()].into())
    );
}

#[test]
fn claude_desktop_and_cursor_files_as_they_are() {
    let text = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {"DEBUG": "1"}
    },
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    "off": {"command": "nothing", "disabled": true}
  }
}"#;
    let c = ok(text, Format::Json);
    let names: Vec<_> = c.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "legacy", "remote"]);
    assert!(matches!(
        &c.upstreams[1].target,
        Target::Http {
            transport: HttpTransport::Sse,
            ..
        }
    ));
    assert!(matches!(
        &c.upstreams[2].target,
        Target::Http { transport: HttpTransport::Auto, headers, .. }
            if headers == &vec![("Authorization".to_owned(), HeaderSource::Value("Bearer x".into()))]
    ));
    assert_eq!(c.routes.len(), 1);
}

#[test]
fn vs_code_servers_as_they_are() {
    let text = r#"{
  "inputs": [],
  "servers": {
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
    "web": {"type": "http", "url": "http://127.0.0.1:3001/mcp"}
  }
}"#;
    let c = ok(text, Format::Json);
    assert!(matches!(&c.upstreams[0].target, Target::Stdio { command, .. } if command == "uvx"));
    assert!(matches!(
        &c.upstreams[1].target,
        Target::Http {
            transport: HttpTransport::Auto,
            ..
        }
    ));
}

#[test]
fn foreign_entries_with_unknown_keys_or_types_are_problems() {
    let text = "{\n\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"colour\": []},\n  \"b\": {\"type\": \"websocket\", \"url\": \"ws://h\"},\n  \"c\": {\"command\": 5},\n  \"bad.name\": {\"command\": \"x\"}\n}\n}";
    let p = problems(text, Format::Json);
    let expect = [
        "3:35: mcpServers.a.colour: unknown key (known: type, command, args,",
        "4:17: mcpServers.b.type: unknown server type \"websocket\"",
        "5:20: mcpServers.c.command: must be a string",
    ];
    for e in expect {
        assert!(
            p.iter().any(|l| l.starts_with(e)),
            "missing {e:?} in {p:#?}"
        );
    }
    assert!(
        p.iter().any(|l| l.contains("\"bad.name\" must be")),
        "{p:#?}"
    );
}

#[test]
fn syntax_errors_and_wrong_files() {
    let p = problems("[upstreams.a\ncommand = 1", Format::Toml);
    assert_eq!(p.len(), 1);
    assert!(p[0].starts_with("1:"), "{p:?}");
    assert_eq!(
        problems("[1, 2]", Format::Json),
        ["1:1: the file must hold a table (an object) of settings"]
    );
    let dir = std::env::temp_dir().join(format!("sb-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ini = dir.join("gateway.ini");
    std::fs::write(&ini, "x").unwrap();
    assert!(load(&ini).unwrap_err()[0]
        .message
        .contains("unknown file type"));
    assert!(load(&dir.join("missing.toml")).unwrap_err()[0]
        .message
        .contains("cannot read"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_schema_is_valid_and_names_every_key_the_types_read() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap();
    let upstream_keys: BTreeSet<&str> = schema["$defs"]["upstream"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // Every key the schema allows is read (the types deny unknown fields, so a
    // key the schema allows but the types lack would fail this load).
    let mut all = String::from("[upstreams.a]\n");
    all.push_str("command = \"x\"\nargs = []\nenv = {}\ncwd = \"/\"\nchild = \"shared\"\nprefix = \"p\"\ntimeout = \"2m\"\n");
    all.push_str("[upstreams.b]\nurl = \"http://h/\"\ntransport = \"stateless\"\nheaders = {}\n");
    let c = ok(&all, Format::Toml);
    assert_eq!(c.upstreams[0].list_timeout, Duration::from_secs(120));
    assert_eq!(
        upstream_keys,
        BTreeSet::from([
            "command",
            "args",
            "env",
            "cwd",
            "child",
            "url",
            "transport",
            "headers",
            "prefix",
            "timeout"
        ])
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert!(parse_duration("2h").is_err());
    assert!(parse_duration("s").is_err());
}

#[test]
fn another_applications_file_is_placed_at_its_own_keys() {
    let text = "{\n\"mcpServers\": {\n  \"b\": {\"args\": [\"x\"]},\n  \"c\": {\"command\": \"x\", \"autoApprove\": [\"t\"], \"dev\": {}}\n}\n}";
    let p = problems(text, Format::Json);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].starts_with("3:8: mcpServers.b: needs `command`"),
        "{p:#?}"
    );
}

#[test]
fn editor_variables_and_env_files_are_problems() {
    let text = r#"{"servers": {"a": {"type": "http", "url": "http://h/mcp",
        "headers": {"Authorization": "Bearer ${input:token}"}},
        "b": {"command": "x", "envFile": "${workspaceFolder}/.env"}}}"#;
    let p = problems(text, Format::Json);
    assert!(
        p.iter()
            .any(|l| l.contains("servers.a.headers.Authorization: holds an editor variable")),
        "{p:#?}"
    );
    assert!(
        p.iter()
            .any(|l| l.contains("servers.b.envFile: envFile is not read")),
        "{p:#?}"
    );
}
