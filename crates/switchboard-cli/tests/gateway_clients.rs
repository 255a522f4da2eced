//! `switchboard gateway` called by third-party MCP clients: the TypeScript SDK
//! v2 client (`@modelcontextprotocol/client`, `tests/interop/ts2_gateway_client.mjs`)
//! and the MCP Inspector in CLI mode (`@modelcontextprotocol/inspector --cli`).
//!
//! One gateway in front of three `switchboard example-server` stdio upstreams,
//! one per kind of server: `plain` (every revision), `modern`
//! (`--modern-only`, 2026-07-28 only) and `old` (`--protocol-version
//! 2025-11-25`). Each client lists the tools (every called one must be listed)
//! and calls `echo` of every upstream with a text of its own, checking the
//! result's text.
//!
//! The clients are found through the variables of `scripts/install-peers`
//! (`SWITCHBOARD_NODE`, `SWITCHBOARD_TS_V2_DIR`, `SWITCHBOARD_INSPECTOR_CLI`): a
//! test prints `SKIPPED: ...` and passes when one it needs is unset. Every wait
//! is bounded.

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod gateway_util;

use std::path::{Path, PathBuf};
use std::time::Duration;

use gateway_util::{eventually, example_upstream, GatewayProc, TempDir};
use serde_json::{json, Value};

/// The upstreams every test puts behind the gateway.
const UPSTREAMS: [&str; 3] = ["plain", "modern", "old"];

/// A gateway in front of the three example servers, once each one's tools are
/// listed through it.
async fn gateway(dir: &Path) -> GatewayProc {
    let config = [
        example_upstream("plain", &[]),
        example_upstream("modern", &["--modern-only"]),
        example_upstream("old", &["--protocol-version", "2025-11-25"]),
    ]
    .concat();
    let gw = GatewayProc::start(dir, &config).await;
    eventually(Duration::from_secs(30), "every upstream listed", || async {
        let client = gateway_util::connect(&gw, gateway_util::Leg::Streamable).await;
        let names = gateway_util::tool_names(&client).await;
        client.close().await;
        UPSTREAMS
            .iter()
            .all(|u| names.contains(&format!("{u}__echo")))
            .then_some(())
    })
    .await;
    gw
}

/// `echo` of every upstream with a text unique to `tag`: `{name, arguments,
/// expect}` for the scripts.
fn calls(tag: &str) -> Vec<Value> {
    UPSTREAMS
        .iter()
        .map(|u| {
            let text = format!("{tag} via {u}");
            json!({"name": format!("{u}__echo"), "arguments": {"text": text}, "expect": text})
        })
        .collect()
}

fn interop(file: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(file);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// The TypeScript SDK v2 client, `versionNegotiation` `auto` (it must speak
/// 2026-07-28 to the gateway, as the SDK reports it) and `legacy` (a
/// 2025-11-25 session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v2_client_reaches_every_upstream_through_the_gateway() {
    let Some(spec) = peers::ts_v2_script("ts2-gateway-client", &interop("ts2_gateway_client.mjs"))
    else {
        return;
    };
    let dir = TempDir::new("ts2-client");
    let gw = gateway(dir.path()).await;
    for (mode, era, version) in [
        ("auto", "era modern", "version 2026-07-28"),
        ("legacy", "era legacy", "version 2025-11-25"),
    ] {
        let tag = format!("ts2-{mode}");
        let mut cmd = spec.command();
        cmd.args([mode, &gw.url, &Value::from(calls(&tag)).to_string()]);
        let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
        let stdout = peers::assert_script_ok(&out, &format!("ts2 gateway client ok ({mode},"));
        eprintln!("{}", stdout.trim_end());
        assert!(
            stdout.contains(era) && stdout.contains(version),
            "{mode}: expected {era}, {version}: {stdout}\ngateway log:\n{}",
            gw.log()
        );
    }
}

/// Runs the Inspector CLI on the gateway's URL with `args` (its catalog and
/// configuration kept in `home`); the `result` of its stdout, one JSON object
/// `{"result": ...}` with `--format json`.
async fn inspector(spec: &peers::PeerSpec, home: &Path, url: &str, args: &[&str]) -> Value {
    let mut cmd = spec.command();
    cmd.arg(url)
        .args(["--transport", "http", "--format", "json", "--quiet"])
        .args(["--stored-auth-only", "--connect-timeout", "20000"])
        .args(args)
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .env("MCP_CLIENT_CONFIG_PATH", home.join("client.json"))
        .env("NO_COLOR", "1");
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector {args:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("inspector {args:?}: not JSON ({e}):\n{stdout}\n{stderr}"));
    assert!(
        v["result"].is_object(),
        "inspector {args:?}: no result: {v}"
    );
    v["result"].clone()
}

/// The MCP Inspector's CLI mode, `--protocol-era legacy` (a 2025-11-25
/// session) and `modern` (2026-07-28): `tools/list` names every upstream's
/// `echo`, and `tools/call` of each answers its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_reaches_every_upstream_through_the_gateway() {
    let Some(spec) = peers::inspector_cli() else {
        return;
    };
    let dir = TempDir::new("inspector-cli");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let gw = gateway(dir.path()).await;
    for era in ["legacy", "modern"] {
        let listing = inspector(
            &spec,
            &home,
            &gw.url,
            &["--protocol-era", era, "--method", "tools/list"],
        )
        .await;
        let names: Vec<&str> = listing["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{era}: no tools in {listing}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for call in calls("inspector") {
            let name = call["name"].as_str().unwrap();
            assert!(names.contains(&name), "{era}: {name} not in {names:?}");
        }
        for call in calls(&format!("inspector-{era}")) {
            let name = call["name"].as_str().unwrap();
            let result = inspector(
                &spec,
                &home,
                &gw.url,
                &[
                    "--protocol-era",
                    era,
                    "--method",
                    "tools/call",
                    "--tool-name",
                    name,
                    "--tool-args-json",
                    &call["arguments"].to_string(),
                ],
            )
            .await;
            assert_ne!(result["isError"], true, "{era}: {name}: {result}");
            let text: String = result["content"]
                .as_array()
                .unwrap_or_else(|| panic!("{era}: {name}: no content: {result}"))
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect();
            assert_eq!(text, call["expect"].as_str().unwrap(), "{era}: {name}");
        }
    }
}
