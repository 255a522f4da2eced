use super::*;

/// An environment with `TOKEN` and `HOME` set, only `/run/secret` readable,
/// every directory but `/nowhere` usable, every program but `missing` found,
/// for a file in `/work/proj/.vscode`.
fn env() -> Env {
    Env {
        var: Box::new(|name| match name {
            "TOKEN" => Some("t".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        }),
        readable: Box::new(|path| {
            if path == Path::new("/run/secret") {
                Ok(())
            } else {
                Err("No such file or directory".to_owned())
            }
        }),
        directory: Box::new(|path| {
            if path.starts_with("/nowhere") {
                Err("No such file or directory (os error 2)".to_owned())
            } else {
                Ok(())
            }
        }),
        program: Box::new(|child| {
            if child.command == "missing" {
                Err("missing: not found in PATH".to_owned())
            } else {
                Ok(())
            }
        }),
        dir: PathBuf::from("/work/proj/.vscode"),
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
        "upstreams.d: upstreams \"c\" and \"d\" both have the prefix \"c\"",
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
    let text = "{\n\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"colour\": []},\n  \"b\": {\"type\": \"websocket\", \"url\": \"ws://h\"},\n  \"c\": {\"command\": 5},\n  \"d\": {\"comand\": \"x\"}\n}\n}";
    let p = problems(text, Format::Json);
    let expect = [
        "3:35: mcpServers.a.colour: unknown key (known: type, command, args,",
        "6:19: mcpServers.d.comand: unknown key (did you mean `command`?)",
        "4:17: mcpServers.b.type: unknown server type \"websocket\"",
        "5:20: mcpServers.c.command: must be a string",
    ];
    for e in expect {
        assert!(
            p.iter().any(|l| l.starts_with(e)),
            "missing {e:?} in {p:#?}"
        );
    }
    // Nothing else: no "needs `command`" beside the misspelt one.
    assert_eq!(p.len(), expect.len(), "{p:#?}");
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
    let mut all = String::from("admin = \"9464\"\nlog_format = \"json\"\n");
    all.push_str("allow_hosts = [\"mcp.example.com\"]\nno_default_hosts = true\nallow_origins = [\"https://app.example.com\"]\nno_default_origins = true\n");
    all.push_str("max_body = 10\nmax_sessions = 11\nidle_timeout = \"90s\"\nsse_retry = \"2s\"\nrequest_timeout = \"1m\"\nheld_call_timeout = \"2m\"\n");
    all.push_str(
        "max_in_flight = 12\ninit_timeout = \"3s\"\ndrain_timeout = \"4s\"\nthreads = 2\n",
    );
    all.push_str("audit = { file = \"a.jsonl\", arguments = true, max_bytes = 10, keep = 2, checkpoint_seconds = 3 }\n[upstreams.a]\n");
    all.push_str("command = \"x\"\nargs = []\nenv = {}\ncwd = \"/\"\nchild = \"shared\"\ninherit_env = true\nprefix = \"p\"\ntimeout = \"2m\"\n");
    all.push_str("[upstreams.b]\nurl = \"http://h/\"\ntransport = \"stateless\"\nheaders = {}\n");
    all.push_str("[auth]\nissuer = \"https://as\"\nresource = \"https://gw/mcp\"\njwks = \"https://as/jwks\"\nscopes = [\"s\"]\ntool_scopes = { t = [\"u\"] }\n");
    all.push_str("introspection = { endpoint = \"https://as/i\", client_id = \"c\", client_secret_env = \"TOKEN\", accept_missing_audience = true }\n");
    all.push_str("[routes.r]\npath = \"/r\"\nupstreams = [\"a\"]\ntools = [\"p__x\"]\nauth = { resource = \"https://gw/r\" }\n");
    let c = ok(&all, Format::Toml);
    assert_eq!(c.upstreams[0].list_timeout, Duration::from_secs(120));
    assert_eq!(c.admin, Some("127.0.0.1:9464".parse().unwrap()));
    let serve = crate::serve_args::ServeArgs::default()
        .resolve(&c.serve)
        .unwrap();
    assert_eq!(
        (
            serve.allow_hosts.as_slice(),
            serve.default_hosts,
            serve.default_origins
        ),
        (&["mcp.example.com".to_owned()][..], false, false)
    );
    assert_eq!(
        (
            serve.max_body,
            serve.max_sessions,
            serve.max_in_flight,
            serve.threads
        ),
        (10, 11, 12, 2)
    );
    assert_eq!(
        [
            serve.idle_timeout.unwrap(),
            serve.sse_retry.unwrap(),
            serve.request_timeout,
            serve.held_call_timeout,
            serve.init_timeout,
            serve.drain_timeout
        ]
        .map(|d| d.as_secs()),
        [90, 2, 60, 120, 3, 4]
    );
    let audit = c.audit.clone().expect("the audit table").to_config();
    assert_eq!(
        (
            audit.path.to_str(),
            audit.arguments,
            audit.max_bytes,
            audit.keep
        ),
        (Some("/work/proj/a.jsonl"), true, 10, 2)
    );
    assert_eq!(audit.checkpoint_every, Duration::from_secs(3));
    let keys = |v: &Value| -> BTreeSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    let names =
        |list: &[&str]| -> BTreeSet<String> { list.iter().map(|s| s.to_string()).collect() };
    assert_eq!(
        keys(&schema["properties"]),
        names(&[
            "$schema",
            "listen",
            "admin",
            "audit",
            "log_format",
            "upstreams",
            "routes",
            "auth"
        ])
        .into_iter()
        .chain(crate::serve_args::FILE_KEYS.map(String::from))
        .collect::<BTreeSet<String>>()
    );
    assert_eq!(
        keys(&schema["$defs"]["route"]["properties"]),
        names(&["path", "upstreams", "tools", "auth"])
    );
    assert_eq!(
        keys(&schema["$defs"]["auth"]["properties"]),
        names(&[
            "issuer",
            "resource",
            "jwks",
            "scopes",
            "tool_scopes",
            "introspection"
        ])
    );
    assert_eq!(
        keys(&schema["$defs"]["auth"]["properties"]["introspection"]["properties"]),
        names(&[
            "endpoint",
            "client_id",
            "client_secret_env",
            "accept_missing_audience"
        ])
    );
    assert_eq!(
        upstream_keys,
        BTreeSet::from([
            "command",
            "args",
            "env",
            "cwd",
            "child",
            "inherit_env",
            "url",
            "transport",
            "headers",
            "prefix",
            "timeout"
        ])
    );
}

#[test]
fn durations_are_the_flags_durations_and_explained_by_example() {
    let c = ok(
        "[upstreams.a]\ncommand = \"x\"\ntimeout = \"2h\"\n",
        Format::Toml,
    );
    assert_eq!(c.upstreams[0].list_timeout, Duration::from_secs(7200));
    let c = ok(
        "[upstreams.a]\ncommand = \"x\"\ntimeout = \"7\"\n",
        Format::Toml,
    );
    assert_eq!(c.upstreams[0].list_timeout, Duration::from_secs(7));
    assert_eq!(
        problems(
            "[upstreams.a]\ncommand = \"x\"\ntimeout = \"5 seconds\"\n",
            Format::Toml
        ),
        [
            r#"3:11: upstreams.a.timeout: unknown unit " seconds" in "5 seconds": write e.g. "5s", "30m", "2h" or "250ms""#
        ]
    );
    assert_eq!(
        problems(
            "idle_timeout = \"soon\"\n[upstreams.a]\ncommand = \"x\"\n",
            Format::Toml
        ),
        [
            r#"1:16: idle_timeout: "soon" is not a duration: write e.g. "5s", "30m", "2h" or "250ms""#
        ]
    );
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
fn editor_variables_are_expanded_and_an_input_refused() {
    // The file is in /work/proj/.vscode: the workspace is /work/proj.
    let text = r#"{"servers": {
        "a": {"command": "${workspaceFolder}/bin/srv", "args": ["${userHome}/data", "${workspaceFolderBasename}"],
              "env": {"T": "${env:TOKEN}"}},
        "w": {"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}}}}"#;
    let c = ok(text, Format::Json);
    match &c.upstreams[0].target {
        Target::Stdio {
            command, args, env, ..
        } => {
            assert_eq!(command, "/work/proj/bin/srv");
            assert_eq!(args, &["/home/u/data", "proj"]);
            assert_eq!(env["T"], "t");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&c.upstreams[1].target, Target::Http { headers, .. }
        if headers == &vec![("Authorization".to_owned(), HeaderSource::Value("Bearer t".into()))])
    );

    let text = r#"{"servers": {"a": {"type": "http", "url": "http://h/mcp",
        "headers": {"Authorization": "Bearer ${input:token}"}},
        "b": {"command": "x", "envFile": "${workspaceFolder}/.env"},
        "c": {"command": "x", "args": ["${env:NOPE}", "${cwd}"]},
        "off": {"command": "x", "args": ["${input:unused}"], "disabled": true}}}"#;
    assert_eq!(
        problems(text, Format::Json),
        [
            "2:38: servers.a.headers.Authorization: `${input:token}` asks the user in the editor, and switchboard cannot ask: give the value itself, or `${env:NAME}` to read it from the environment",
            "3:42: servers.b.envFile: envFile is not read by switchboard: give the variables under `env`",
            "4:40: servers.c.args[0]: `${env:NOPE}`: the environment variable NOPE is not set",
            "4:55: servers.c.args[1]: unknown variable `${cwd}` (known: workspaceFolder, workspaceFolderBasename, userHome, env:NAME, pathSeparator)",
        ]
    );
}

#[test]
fn relative_paths_are_the_files_and_start_checks_run_at_load() {
    // Against the workspace (/work/proj) for a file in .vscode.
    let text = r#"{"servers": {
        "a": {"command": "./run.sh", "cwd": "srv"},
        "b": {"command": "bin/b"},
        "c": {"command": "node", "cwd": "/abs"}}}"#;
    let c = ok(text, Format::Json);
    let stdio = |i: usize| match &c.upstreams[i].target {
        Target::Stdio { command, cwd, .. } => (command.clone(), cwd.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        stdio(0),
        (
            "/work/proj/srv/run.sh".to_owned(),
            Some(PathBuf::from("/work/proj/srv"))
        )
    );
    assert_eq!(stdio(1), ("/work/proj/bin/b".to_owned(), None));
    assert_eq!(stdio(2), ("node".to_owned(), Some(PathBuf::from("/abs"))));
    // A missing directory is named as such, not blamed on the command too.
    let text = "[upstreams.a]\ncommand = \"missing\"\ncwd = \"/nowhere/x\"\n\n[upstreams.b]\ncommand = \"missing\"\n\n[upstreams.c]\nurl = \"http://h/mcp\"\nheaders = { K = { file = \"secret\" } }\n";
    assert_eq!(
        problems(text, Format::Toml),
        [
            "3:7: upstreams.a.cwd: the working directory /nowhere/x cannot be used: No such file or directory (os error 2)",
            "6:11: upstreams.b.command: cannot be run: missing: not found in PATH",
            "10:26: upstreams.c.headers.K.file: cannot read secret: No such file or directory",
        ]
    );
}

#[test]
fn names_a_gateway_cannot_serve_are_given_one_with_a_note() {
    let text = r#"{"mcpServers": {"My Server": {"command": "x"}, "a/b": {"command": "x"}, "ok": {"command": "x"}}}"#;
    let c = ok(text, Format::Json);
    let names: Vec<(&str, Option<&str>)> = c
        .upstreams
        .iter()
        .map(|u| (u.name.as_str(), u.prefix.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("My-Server", Some("My-Server")),
            ("a-b", Some("a-b")),
            ("ok", Some("ok"))
        ]
    );
    assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    assert!(
        c.notes[0].starts_with(r#"mcpServers."My Server" is served as upstream "My-Server""#),
        "{:?}",
        c.notes
    );
    // Two that would be served by one name: both named, at the second.
    let text = r#"{"mcpServers": {"a b": {"command": "x"}, "a-b": {"command": "x"}, "!!": {"command": "x"}}}"#;
    assert_eq!(
        problems(text, Format::Json),
        [
            r#"1:49: mcpServers.a-b: "a-b" and "a b" would both be served as upstream "a-b": rename one"#,
            r#"1:73: mcpServers."!!": the name "!!" has no letters or digits to serve it by"#,
        ]
    );
}

#[test]
fn unknown_keys_get_the_nearest_known_one() {
    let text = "listn = \"127.0.0.1:1\"\nidle_timout = \"5s\"\n[upstreams.a]\ncomand = \"x\"\ncommand = \"x\"\n[routes.r]\npath = \"/r\"\ntols = []\nzzzzzz = 1\n";
    assert_eq!(
        problems(text, Format::Toml),
        [
            "1:9: listn: unknown key (did you mean `listen`?)",
            "2:15: idle_timout: unknown key (did you mean `idle_timeout`?)",
            "4:10: upstreams.a.comand: unknown key (did you mean `command`?)",
            "8:8: routes.r.tols: unknown key (did you mean `tools`?)",
            "9:10: routes.r.zzzzzz: unknown key (known: path, upstreams, tools, auth)",
        ]
    );
}

#[test]
fn the_gateways_own_keys_beside_an_applications_list_are_problems() {
    let text = r#"{"globalShortcut": "Ctrl+Space", "listen": "0.0.0.0:9", "mcpServers": {"a": {"command": "x"}}}"#;
    let p = problems(text, Format::Json);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].starts_with("1:44: listen: `listen` is a setting of the gateway's own file shape, not read beside `mcpServers`"),
        "{p:#?}"
    );
}

const AUTH: &str = r#"
[upstreams.a]
command = "x"

[auth]
issuer = "https://as.example"
resource = "https://gw.example/mcp"
scopes = ["mcp:tools"]
tool_scopes = { a__rm = ["files:write"] }
introspection = { endpoint = "https://as.example/introspect", client_id = "gw", client_secret_env = "TOKEN" }

[routes.review]
path = "/review/mcp"
auth = { resource = "https://gw.example/review/mcp", scopes = ["review"] }

[routes.public]
path = "/public/mcp"
auth = false

[routes.other]
path = "/other/mcp"
auth = { issuer = "http://127.0.0.1:9000", resource = "https://gw.example/other/mcp", jwks = "http://127.0.0.1:9000/jwks", tool_scopes = {} }
"#;

#[test]
fn auth_tables_global_per_route_and_off() {
    let c = ok(AUTH, Format::Toml);
    let global = c.auth.clone().expect("the top-level table");
    assert_eq!(global.issuer, "https://as.example");
    assert_eq!(global.resource.as_deref(), Some("https://gw.example/mcp"));
    assert_eq!(global.tool_scopes["a__rm"], ["files:write"]);
    let i = global.introspection.clone().unwrap();
    assert_eq!(
        (
            i.client_id.as_str(),
            i.client_secret_env.as_str(),
            i.accept_missing_audience
        ),
        ("gw", "TOKEN", false)
    );
    let by_path = |p: &str| c.routes.iter().find(|r| r.path == p).unwrap().auth.clone();
    assert_eq!(by_path("/mcp"), RouteAuth::Global);
    assert_eq!(by_path("/public/mcp"), RouteAuth::Off);
    // Own: the route's keys over the top-level ones, `resource` its own.
    let RouteAuth::Own(review) = by_path("/review/mcp") else {
        panic!("review has its own table")
    };
    assert_eq!(review.issuer, "https://as.example");
    assert_eq!(
        review.resource.as_deref(),
        Some("https://gw.example/review/mcp")
    );
    assert_eq!(review.scopes, ["review"]);
    assert_eq!(review.tool_scopes, global.tool_scopes);
    assert_eq!(review.introspection, global.introspection);
    let RouteAuth::Own(other) = by_path("/other/mcp") else {
        panic!("other has its own table")
    };
    assert_eq!(other.issuer, "http://127.0.0.1:9000");
    assert_eq!(other.jwks.as_deref(), Some("http://127.0.0.1:9000/jwks"));
    assert!(other.tool_scopes.is_empty(), "an empty table replaces");
    assert_eq!(other.scopes, ["mcp:tools"]);
    // The resource server's configuration, the secret read from its variable.
    let rs = review
        .resource_config(|v| (v == "TOKEN").then(|| "s3".to_owned()))
        .unwrap();
    assert_eq!(rs.resource, "https://gw.example/review/mcp");
    assert_eq!(rs.introspection.unwrap().client_secret, "s3");
    assert!(review
        .resource_config(|_| None)
        .unwrap_err()
        .contains("TOKEN"));
    // The summary says how each route is protected.
    let s = summary(&c);
    assert!(
        s.contains("route  /public/mcp  upstreams a  every tool  auth: off"),
        "{s}"
    );
    assert!(
        s.contains("auth: resource https://gw.example/review/mcp"),
        "{s}"
    );
}

#[test]
fn broken_auth_tables_are_problems_at_their_keys() {
    let text = r#"
[upstreams.a]
command = "x"

[auth]
issuer = "http://as.example"
scopes = ["has space"]
introspection = { endpoint = "https://as.example/i", client_id = "gw", client_secret_env = "UNSET" }

[routes.r1]
path = "/r1"
auth = { scopes = ["x"] }

[routes.r2]
path = "/r2"
auth = { resource = "https://gw.example/r2#frag", jwks = "not a url", resorce = "x" }

[routes.r3]
path = "/r3"
auth = true
"#;
    let p = problems(text, Format::Toml);
    let has = |needle: &str| {
        assert!(p.iter().any(|l| l.contains(needle)), "{needle}: {p:#?}");
    };
    // The schema's problems first (unknown keys, bad scopes, `true`): then
    // nothing else is checked.
    has("routes.r2.auth.resorce: unknown key");
    has("auth.scopes[0]: not an OAuth scope");
    has("routes.r3.auth: `true` is not a setting");
    assert!(
        p.iter()
            .all(|l| l.starts_with(|c: char| c.is_ascii_digit())),
        "{p:#?}"
    );

    let text = text
        .replace(", resorce = \"x\"", "")
        .replace("auth = true", "auth = false")
        .replace("\"has space\"", "\"ok\"");
    let p = problems(&text, Format::Toml);
    let has = |needle: &str| {
        assert!(p.iter().any(|l| l.contains(needle)), "{needle}: {p:#?}");
    };
    has("6:10: auth.issuer: \"http://as.example\" must use https");
    has("auth.introspection.client_secret_env: the environment variable UNSET is not set");
    has("auth: needs `resource`: the routes without an auth table of their own (default) are protected by this one");
    has("routes.r1.auth: needs `resource`");
    has("routes.r2.auth.resource: \"https://gw.example/r2#frag\": a resource URI has no fragment");
    has("routes.r2.auth.jwks: \"not a url\" is not an absolute http(s) URL");
    assert_eq!(p.len(), 6, "{p:#?}");
}

#[test]
fn a_route_table_needs_an_issuer_and_a_resource_of_its_own() {
    let text = r#"
[upstreams.a]
command = "x"

[routes.r1]
path = "/r1"
auth = { resource = "https://gw.example/r1" }

[routes.r2]
path = "/r2"
auth = { issuer = "https://as.example", resource = "https://gw.example/r1" }
"#;
    let p = problems(text, Format::Toml);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p[0].contains("routes.r1.auth: no `issuer`: set it here or in the top-level [auth] table"),
        "{p:#?}"
    );
    assert!(
        p[1].contains("routes.r2.auth.resource: \"https://gw.example/r1\" is also the resource of route \"r1\""),
        "{p:#?}"
    );
    // The top-level resource, used by the default route, is one of them too.
    let text = r#"
[upstreams.a]
command = "x"
[auth]
issuer = "https://as.example"
resource = "https://gw.example/mcp"
[routes.r1]
path = "/r1"
auth = { resource = "https://gw.example/mcp" }
"#;
    let p = problems(text, Format::Toml);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains(
            "auth.resource: \"https://gw.example/mcp\" is also the resource of route \"r1\""
        ),
        "{p:#?}"
    );
    // Without a route using it, the top-level table needs no resource.
    let text = r#"
[upstreams.a]
command = "x"
[auth]
issuer = "https://as.example"
[routes.main]
path = "/mcp"
auth = { resource = "https://gw.example/mcp" }
"#;
    let c = ok(text, Format::Toml);
    assert!(c.auth.unwrap().resource.is_none());
}

#[test]
fn the_documented_examples_are_valid() {
    for (name, text) in [
        (
            "gateway.toml",
            include_str!("../../../../docs/examples/gateway.toml"),
        ),
        (
            "gateway-auth.toml",
            include_str!("../../../../docs/examples/gateway-auth.toml"),
        ),
    ] {
        parse(text, Format::Toml, &env()).unwrap_or_else(|p| panic!("{name}: {p:#?}"));
    }
    let c = ok(
        include_str!("../../../../docs/examples/gateway-auth.toml"),
        Format::Toml,
    );
    let protection: Vec<_> = c
        .routes
        .iter()
        .map(|r| (r.path.as_str(), &r.auth))
        .collect();
    assert!(matches!(
        protection.as_slice(),
        [
            ("/mcp", RouteAuth::Global),
            ("/public/mcp", RouteAuth::Off),
            ("/review/mcp", RouteAuth::Own(_))
        ]
    ));
}

#[test]
fn the_admin_port_may_be_a_number_and_a_bad_one_is_a_problem() {
    let c = ok(
        "admin = 9464\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    assert_eq!(c.admin, Some("127.0.0.1:9464".parse().unwrap()));
    let c = ok(
        "admin = \"0.0.0.0:9000\"\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    assert_eq!(c.admin, Some("0.0.0.0:9000".parse().unwrap()));
    let p = problems(
        "admin = 99999\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    assert!(p.iter().any(|p| p.contains("admin")), "{p:?}");
    let p = problems(
        "log_format = \"xml\"\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    assert!(p.iter().any(|p| p.contains("log_format")), "{p:?}");
}

#[test]
fn the_audit_trail_is_a_path_or_a_table_and_an_empty_one_is_a_problem() {
    let c = ok(
        "audit = \"trail.jsonl\"\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    let a = c.audit.expect("a trail").to_config();
    assert_eq!(
        (a.path.to_str(), a.arguments, a.keep),
        (Some("/work/proj/trail.jsonl"), false, 16)
    );
    for bad in [
        "audit = \"\"\n",
        "audit = { arguments = true }\n",
        "audit = 3\n",
    ] {
        let text = format!("{bad}[upstreams.a]\ncommand = \"x\"\n");
        assert!(!problems(&text, Format::Toml).is_empty(), "{bad}");
    }
}

#[test]
fn a_file_with_two_lists_of_servers_is_one_problem() {
    // Before: the `mcpServers` list was read and the other silently ignored.
    for (text, other) in [
        (
            "{\n\"mcpServers\": {\"a\": {\"command\": \"x\"}},\n\"servers\": {\"b\": {\"command\": \"y\"}}\n}",
            "servers",
        ),
        (
            "{\n\"mcpServers\": {\"a\": {\"command\": \"x\"}},\n\"upstreams\": {\"b\": {\"command\": \"y\"}}\n}",
            "upstreams",
        ),
    ] {
        let p = problems(text, Format::Json);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(
            p[0].starts_with("3:")
                && p[0].contains(&format!(": {other}: holds both `mcpServers` and `{other}`")),
            "{p:#?}"
        );
    }
}

#[test]
fn vs_code_jsonc_and_a_schema_key_are_read() {
    // Comments and trailing commas, as VS Code writes .vscode/mcp.json.
    let text = "{\n  // the servers\n  \"$schema\": \"x\",\n  \"servers\": {\n    /* time */ \"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\",],},\n  },\n}\n";
    let c = ok(text, Format::Json);
    assert_eq!(c.upstreams[0].name, "time");
    // A problem's place is still the file's own line and column.
    let bad = "{\n  // one\n  \"servers\": {\"t\": {\"command\": 5,},},\n}\n";
    let p = problems(bad, Format::Json);
    assert!(p.iter().any(|l| l.starts_with("3:")), "{p:#?}");
    // `$schema` in the project's own shape, in every format.
    ok(
        "\"$schema\" = \"x\"\n[upstreams.a]\ncommand = \"x\"\n",
        Format::Toml,
    );
    ok(
        "$schema: x\nupstreams:\n  a:\n    command: x\n",
        Format::Yaml,
    );
}

#[test]
fn a_word_not_among_the_few_lists_them_all_and_the_nearest() {
    assert_eq!(
        problems(
            "[upstreams.a]\nurl = \"http://h/mcp\"\ntransport = \"streamable\"\n",
            Format::Toml
        ),
        [
            r#"3:13: upstreams.a.transport: "streamable" is not one of "auto", "streamable-http", "sse", "stateless" (did you mean `streamable-http`?)"#
        ]
    );
}
