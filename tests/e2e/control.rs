//! Control requests before the first user message, against the REAL CLI: an
//! editor's agent starts a stream-json session per turn (`--resume` from the
//! second on), sends `initialize`, then another control request (`set_model`,
//! `set_permission_mode`, MCP status…), and waits for each answer before it sends
//! its message. Once the shim answers `initialize` from memory, nothing but a
//! started CLI can answer the next request: the turn must never wait on an answer
//! nobody sends (it hung for good), and the caller gets the CLI's own answers, as
//! without the shim.

use crate::support::{describe, run_with_timeout, ApiServer, Input, Sandbox};
use serde_json::Value;
use std::time::Duration;

/// One turn as the editor's agent runs it; prints what it got, as JSON. A wait of
/// 60 s for any answer is reported as `"hung"` (the test fails on it).
const AGENT: &str = r#"
import json, select, subprocess, sys
request, message, resume = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
args = ["claude", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
if resume:
    args.append("--resume=" + resume)
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
buf = b""
def send(obj):
    p.stdin.write((json.dumps(obj) + "\n").encode()); p.stdin.flush()
def wait_for(pred):
    global buf
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if pred(v):
                return v
        r, _, _ = select.select([p.stdout], [], [], 60)
        if not r:
            return "hung"
        chunk = p.stdout.read1(65536)
        if not chunk:
            return None
        buf += chunk
def answer_to(rid):
    return lambda v: v.get("type") == "control_response" and v["response"].get("request_id") == rid
send({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}})
init = wait_for(answer_to("req_1"))
send({"type": "control_request", "request_id": "req_2", "request": request})
second = wait_for(answer_to("req_2"))
out = {"init": init is not None and init != "hung", "second": second}
if second not in (None, "hung"):
    send({"type": "user", "session_id": "", "parent_tool_use_id": None,
          "message": {"role": "user", "content": [{"type": "text", "text": message}]}})
    result = wait_for(lambda v: v.get("type") == "result")
    out["result"] = result
p.stdin.close()
try:
    out["code"] = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill(); out["code"] = "hung"
print(json.dumps(out))
"#;

/// What one turn gave the agent.
fn agent_turn(sb: &Sandbox, shimmed: bool, request: &Value, msg: &str, resume: &str) -> Value {
    let mut cmd = sb.client("python3", ["-c", AGENT, &request.to_string(), msg, resume]);
    if !shimmed {
        cmd.env("PATH", sb.direct_path());
    }
    let out = run_with_timeout(cmd, Input::Null, Duration::from_secs(300));
    assert!(out.status.success(), "{}", describe(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)))
}

/// The part of an answer the caller acts on: its subtype and, for an error, that
/// it is one (the text names the request's details).
fn gist(answer: &Value) -> Value {
    serde_json::json!({
        "subtype": answer["response"]["subtype"],
        "error": answer["response"]["error"].is_string(),
    })
}

/// Four turns each way; from the third on the shim answers `initialize` from
/// memory (two starts gave the same answer), so the request after it is what the
/// fix is about.
fn control_request_before_the_message(request: Value) {
    let mut gists = Vec::new();
    for shimmed in [false, true] {
        let server = ApiServer::start();
        let mut sb = Sandbox::real(&server);
        let log = sb.root.join("shim.log");
        sb.set_env("CLAUDE_SHIM_LOG", &log);
        let mut session = String::new();
        let mut seen = Vec::new();
        for k in 1..=4 {
            let got = agent_turn(&sb, shimmed, &request, &format!("message {k}"), &session);
            assert_eq!(got["init"], true, "turn {k}: {got}");
            assert!(
                got["second"].is_object(),
                "turn {k} (shimmed {shimmed}): {got}"
            );
            assert_eq!(got["result"]["subtype"], "success", "turn {k}: {got}");
            assert_eq!(got["code"], 0, "turn {k}: {got}");
            session = got["result"]["session_id"].as_str().unwrap().to_owned();
            seen.push(gist(&got["second"]));
        }
        if shimmed {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                text.contains("initialize answered at once"),
                "the shim answered initialize from memory on some turn:\n{text}"
            );
        }
        gists.push(seen);
    }
    assert_eq!(gists[1], gists[0], "the CLI's answers, as without the shim");
}

#[test]
fn set_model_after_initialize_is_answered() {
    control_request_before_the_message(
        serde_json::json!({"subtype": "set_model", "model": "claude-sonnet-4-5"}),
    );
}

#[test]
fn set_permission_mode_after_initialize_is_answered() {
    control_request_before_the_message(
        serde_json::json!({"subtype": "set_permission_mode", "mode": "acceptEdits"}),
    );
}

#[test]
fn mcp_status_after_initialize_is_answered() {
    control_request_before_the_message(serde_json::json!({"subtype": "mcp_status"}));
}

#[test]
fn interrupt_after_initialize_is_answered() {
    control_request_before_the_message(serde_json::json!({"subtype": "interrupt"}));
}
