//! Work the model starts in the background (issue 49): the loopback server
//! answers a message with a Bash `tool_use` that has `run_in_background: true`
//! (`sleep 3; echo done > marker`). Directly, `claude -p` waits for the
//! command, calls the model again with the task's notification, and prints
//! that final reply. Through the shim, as shipped, the call must do the same:
//! wait as long, print the same final reply, make the same requests (every
//! field, `messages` aside) and none after it ended, and leave the session
//! the direct call would have left for the next turn to continue.

use crate::support::api::{LoggedRequest, TOOL_USE};
use crate::support::requests::{self, Asked};
use crate::support::{describe, ApiServer, Ran, World};
use serde_json::Value;
use std::time::{Duration, Instant};

/// How long the background command runs.
const SLEEP: u64 = 3;
const JOB: &str = "please run the job";
const FINAL: &str = "FINAL: the job is done";

/// Whether the request's last message carries a tool's result.
fn answers_a_tool(req: &LoggedRequest) -> bool {
    req.messages().last().is_some_and(|m| {
        m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    })
}

/// The job's call for a new message asking for it; "started" for the tool's
/// result; the final reply for the task's notification after it; else a
/// plain reply. The command writes `marker` in the call's directory.
fn server() -> ApiServer {
    let server = ApiServer::start();
    server.set_reply(move |req| {
        let last = req.last_user_text().unwrap_or_default();
        let started = req
            .messages()
            .iter()
            .any(|m| m.to_string().contains("toolu_shimtest_"));
        let done = req.assistant_texts().iter().any(|t| t == FINAL);
        if answers_a_tool(req) {
            "the job runs in the background".to_owned()
        } else if last.ends_with(JOB) && !started {
            let call = serde_json::json!({"name": "Bash", "input": {
                "command": format!("sleep {SLEEP}; echo done > marker"),
                "description": "the job",
                "run_in_background": true}});
            format!("{TOOL_USE}{call}")
        } else if started && !done {
            FINAL.to_owned()
        } else {
            format!("hello {}", req.index)
        }
    });
    server
}

/// One caller: the real CLI directly, or through the shim as shipped.
struct Caller {
    w: World,
    direct: bool,
}

impl Caller {
    fn new(direct: bool) -> Caller {
        let mut w = World::with_server(server());
        w.sb.as_shipped();
        Caller { w, direct }
    }

    /// A turn of a client that replays its transcript (json output, Bash
    /// allowed); its time.
    fn call(&mut self, msg: &str) -> (Ran, Duration) {
        let args = ["-p", "--output-format", "json", "--allowedTools", "Bash"];
        let cmd = match self.direct {
            true => self.w.sb.direct(args),
            false => self.w.sb.shimmed(args),
        };
        let start = Instant::now();
        let out = self.w.send(cmd, msg, result);
        assert!(out.status.success(), "{}", describe(&out));
        (out, start.elapsed())
    }

    fn marker(&self) -> bool {
        self.w.sb.work.join("marker").exists()
    }
}

fn result(out: &Ran) -> String {
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v["result"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A request's messages as the model reads them: roles, block kinds, the
/// tools called and the texts of the conversation (the CLI's reminders and
/// notifications as their kind only: they name the sandbox's files).
fn shape(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or_default();
        let blocks = match &m["content"] {
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        for b in blocks {
            let text = b["text"].as_str().unwrap_or_default();
            out.push(match b["type"].as_str().unwrap_or_default() {
                // The CLI's environment block: it names the sandbox.
                "text" if role == "system" => "system context".to_owned(),
                "text" if text.starts_with("<system-reminder>") => format!("{role} reminder"),
                "text" if text.contains("<task-notification>") || text.contains("<task") => {
                    format!("{role} notification")
                }
                "text" => {
                    // A replayed transcript's last line is the new message.
                    let last = text.rsplit("Human: ").next().unwrap_or(text);
                    format!("{role} text {last}")
                }
                "tool_use" => format!("{role} tool_use {}", b["name"]),
                "tool_result" => format!("{role} tool_result"),
                other => format!("{role} {other}"),
            });
        }
    }
    out
}

#[test]
fn a_background_command_is_waited_for_as_the_direct_call_waits() {
    let mut ways = [Caller::new(true), Caller::new(false)];
    let mut seen = Vec::new();
    for c in &mut ways {
        let (out, took) = c.call(JOB);
        let reply = result(&out);
        let marker = c.marker();
        let made = c.w.server.main_requests().len();
        // Nothing of the call outlives it: no request once it has ended.
        std::thread::sleep(Duration::from_secs(SLEEP + 2));
        let after = c.w.server.main_requests().len();
        seen.push((reply, marker, made, after, took, describe(&out)));
    }
    let (direct, shim) = (&seen[0], &seen[1]);
    assert_eq!(direct.0, FINAL, "the direct call's reply: {}", direct.5);
    assert!(direct.1, "the direct call ended before its command");
    assert!(direct.4 >= Duration::from_secs(SLEEP), "{:?}", direct.4);
    assert_eq!(
        direct.2, direct.3,
        "the direct call asked the model after it ended"
    );
    assert_eq!(shim.0, direct.0, "through the shim: {}", shim.5);
    assert!(shim.1, "through the shim the call ended before its command");
    assert!(shim.4 >= Duration::from_secs(SLEEP), "{:?}", shim.4);
    assert_eq!(
        shim.2,
        shim.3,
        "through the shim the model was asked after the call ended\n{}",
        ways[1].w.context()
    );
    // The next turn: it continues the session the direct call left.
    for c in &mut ways {
        c.call("say hello");
    }
    let direct_session = {
        // The direct call's session as it left it: its last request of turn 1,
        // and the final reply.
        let reqs = ways[0].w.server.main_requests();
        let last_of_turn_1 = reqs
            .iter()
            .rfind(|r| {
                r.assistant_texts().iter().all(|t| t != FINAL)
                    && !r.user_texts().iter().any(|t| t.ends_with("say hello"))
            })
            .unwrap()
            .clone();
        let mut s = shape(last_of_turn_1.messages());
        s.push(format!("assistant text {FINAL}"));
        s
    };
    let shim_turn_2 = ways[1].w.server.last_main().unwrap();
    let resumed = shape(shim_turn_2.messages());
    assert!(
        resumed.len() > direct_session.len()
            && resumed[..direct_session.len()] == direct_session[..],
        "the shim's next turn does not continue the direct call's session:\n\
         direct left {direct_session:#?}\nshim's next turn sent {resumed:#?}"
    );
    assert_eq!(
        ways[1].w.kinds(),
        ["fresh", "resumed"],
        "{}",
        ways[1].w.context()
    );
    // And the model was asked the same, field for field.
    requests::assert_same(
        "a background command, as shipped",
        &Asked::of(&ways[0].w.sb, &ways[0].w.server.requests()),
        &Asked::of(&ways[1].w.sb, &ways[1].w.server.requests()),
        &[],
    );
}

/// With text input let into live CLIs (`CLAUDE_SHIM_WARM_TEXT=1`) the turn runs
/// in a live CLI, whose `result` comes before the command ends (the opt-in's
/// known difference). Still nothing of the call outlives it: that CLI is not
/// kept, and the model is not called after the call ended.
#[test]
fn a_live_cli_that_left_background_work_is_not_kept() {
    let mut c = Caller::new(false);
    c.w.sb.set_env("CLAUDE_SHIM_WARM_TEXT", "1");
    let (out, _) = c.call(JOB);
    assert_eq!(c.w.engines(), ["live"], "{}", describe(&out));
    let made = c.w.server.main_requests().len();
    std::thread::sleep(Duration::from_secs(SLEEP + 3));
    assert_eq!(
        c.w.server.main_requests().len(),
        made,
        "the model was asked after the call ended\n{}",
        c.w.context()
    );
    // The next turn is not served by that CLI.
    c.call("say hello");
    let engines = c.w.engines();
    assert_ne!(
        engines.last().map(String::as_str),
        Some("warm"),
        "{engines:?}"
    );
}

/// A stream-json caller (as the Agent SDKs call: one user line, then its
/// input closed), directly and through the shim: what each prints and asks.
fn stream_json_call(c: &mut Caller) -> (String, Duration, usize) {
    let args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Bash",
    ];
    let cmd = match c.direct {
        true => c.w.sb.direct(args),
        false => c.w.sb.shimmed(args),
    };
    let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": JOB}});
    let start = Instant::now();
    let out = crate::support::run(cmd, format!("{line}\n").as_bytes());
    let took = start.elapsed();
    assert!(out.status.success(), "{}", describe(&out));
    let results: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "result")
        .map(|v| v["result"].as_str().unwrap_or_default().to_owned())
        .collect();
    (results.join(" | "), took, c.w.server.main_requests().len())
}

/// A stream-json caller's first message (not a transcript the shim knows:
/// it runs cold) that starts a background command: directly, the CLI
/// prints the turn's result, waits for the command (its input ended), answers
/// the notification and prints a second result. Through the shim the same,
/// the same requests, and none after the call.
#[test]
fn a_stream_json_caller_gets_both_results_as_directly() {
    let mut ways = [Caller::new(true), Caller::new(false)];
    let mut seen = Vec::new();
    for c in &mut ways {
        let (results, took, made) = stream_json_call(c);
        std::thread::sleep(Duration::from_secs(SLEEP + 2));
        let after = c.w.server.main_requests().len();
        seen.push((results, took, made, after, c.marker()));
    }
    let (direct, shim) = (&seen[0], &seen[1]);
    assert_eq!(
        direct.0,
        format!("the job runs in the background | {FINAL}"),
        "{direct:?}"
    );
    assert!(
        direct.4 && direct.1 >= Duration::from_secs(SLEEP),
        "{direct:?}"
    );
    assert_eq!(direct.2, direct.3, "directly, a request after the call");
    assert_eq!(shim.0, direct.0, "{}", ways[1].w.context());
    assert!(shim.4 && shim.1 >= Duration::from_secs(SLEEP), "{shim:?}");
    assert_eq!(shim.2, shim.3, "through the shim, a request after the call");
    requests::assert_same(
        "a stream-json caller's background command",
        &Asked::of(&ways[0].w.sb, &ways[0].w.server.requests()),
        &Asked::of(&ways[1].w.sb, &ways[1].w.server.requests()),
        &[],
    );
}
