//! Real clients as they really run, through the shim in front of the REAL Claude Code
//! CLI and the loopback Messages-API server: the official Agent SDKs (Python
//! `claude-agent-sdk`, TypeScript `@anthropic-ai/claude-agent-sdk`, pinned in
//! `.ci/agent-sdk-*-version`, installed by `.ci/install-sdks`) driven by our client
//! programs in `tests/clients/`, and a caller that turns session persistence off.
//!
//! The clients' process lifecycles are their own: the Python SDK waits for the CLI's
//! answer to `initialize` before it sends the message; the TypeScript one sends both at
//! once; the eager clients start the next turn the instant the previous turn's result
//! arrives, while that CLI is still running. The logged request bodies prove what the
//! model was sent: every earlier message once, the new one once.

use crate::support::api::{LoggedRequest, TOOL_USE};
use crate::support::requests::{self, Asked};
use crate::support::{describe, run, sdk, Chat, Client, Ran, World};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sdk {
    Python,
    TypeScript,
}

/// A world our client programs run in.
struct SdkWorld(World);

impl std::ops::Deref for SdkWorld {
    type Target = World;
    fn deref(&self) -> &World {
        &self.0
    }
}

impl std::ops::DerefMut for SdkWorld {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.0
    }
}

impl SdkWorld {
    fn new() -> SdkWorld {
        SdkWorld(World::new())
    }

    /// Our client program for `sdk` in `mode`, with `cli` as its path to claude.
    fn client(&self, sdk: Sdk, mode: &str, turns: usize, cli: &PathBuf, prompt: &str) -> Command {
        let (program, script) = match sdk {
            Sdk::Python => (sdk::python(), sdk::py_client()),
            Sdk::TypeScript => (PathBuf::from("node"), sdk::ts_client()),
        };
        let mut cmd = self.sb.client(program, [script.as_os_str()]);
        cmd.args([mode, "--cli"]).arg(cli).args([
            "--turns",
            &turns.to_string(),
            "--prompt",
            prompt,
        ]);
        if sdk == Sdk::TypeScript {
            cmd.env("CLAUDE_AGENT_SDK_DIR", sdk::ts_package());
        }
        cmd
    }

    /// Run a client through the shim; its turn lines and every message line.
    fn run_client(
        &self,
        sdk: Sdk,
        mode: &str,
        turns: usize,
        prompt: &str,
    ) -> (Vec<Value>, Vec<Value>) {
        let out = run(
            self.client(sdk, mode, turns, &self.sb.shim_claude(), prompt),
            b"",
        );
        lines(&out)
    }

    /// Messages as compared between worlds: this sandbox's ids, times and
    /// paths masked, costs to 6 places.
    fn masked(&self, messages: &[Value]) -> Vec<String> {
        messages
            .iter()
            .map(|v| mask_costs(&self.sb.mask(&v.to_string())))
            .collect()
    }

    /// `(kind, why_code)` of every managed turn, in order.
    fn runs(&self) -> Vec<(String, String)> {
        self.0
            .runs()
            .into_iter()
            .map(|r| (r.kind, r.why_code))
            .collect()
    }
}

/// The client's output: turn lines and message lines (`{"message": …}`).
fn lines(out: &Ran) -> (Vec<Value>, Vec<Value>) {
    assert!(out.status.success(), "client failed:\n{}", describe(out));
    let mut turns = Vec::new();
    let mut messages = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match v.get("message") {
            Some(m) => messages.push(m.clone()),
            None => turns.push(v),
        }
    }
    (turns, messages)
}

/// Every turn answered; returns the replies.
fn replies(turns: &[Value], n: usize) -> Vec<String> {
    assert_eq!(turns.len(), n, "{turns:?}");
    turns
        .iter()
        .map(|t| {
            assert_eq!(t["is_error"], false, "{t}");
            t["result"].as_str().expect("result").to_owned()
        })
        .collect()
}

/// Request k (1-based) of a replaying client carries the first message as the client
/// sent it (a first turn, "Human: …"), then each later message once, as the bare
/// message; and the replies in between once.
fn assert_one_copy_of_history(w: &World, msgs: &[String], replies: &[String]) {
    let main = w.server.main_requests();
    assert_eq!(main.len(), msgs.len(), "one API call per turn");
    for (k, req) in main.iter().enumerate() {
        let mut want: Vec<String> = vec![format!("Human: {}", msgs[0])];
        want.extend(msgs[1..=k].iter().cloned());
        assert_eq!(req.user_texts(), want, "request {}", k + 1);
        assert_eq!(
            req.assistant_texts(),
            replies[..k].to_vec(),
            "request {}",
            k + 1
        );
    }
}

/// The session file holds each message once, and no replayed transcript.
fn assert_session_holds_each_message_once(w: &World, session: &str, msgs: &[String]) {
    let path = w.sb.session_file(session).expect("session file");
    let text = std::fs::read_to_string(&path).unwrap();
    let users: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "user" && r["isMeta"] != true)
        .filter_map(|r| match &r["message"]["content"] {
            Value::String(s) => Some(s.clone()),
            Value::Array(b) => b
                .iter()
                .find(|b| b["type"] == "text")
                .and_then(|b| b["text"].as_str().map(str::to_owned)),
            _ => None,
        })
        .collect();
    let mut want = vec![format!("Human: {}", msgs[0])];
    want.extend(msgs[1..].iter().cloned());
    assert_eq!(users, want, "{}", path.display());
}

fn replay_is_resumed(sdk: Sdk, mode: &str) {
    let w = SdkWorld::new();
    let n = 5;
    let (turns, _) = w.run_client(sdk, mode, n, "message {k}");
    let replies = replies(&turns, n);
    let sessions: Vec<&str> = turns
        .iter()
        .map(|t| t["session_id"].as_str().unwrap())
        .collect();
    let kinds = w.runs();
    assert_eq!(kinds.len(), n, "{kinds:?}");
    assert_eq!(kinds[0].0, "fresh", "{kinds:?}");
    for (k, (kind, why)) in kinds.iter().enumerate().skip(1) {
        assert!(
            kind == "resumed" || kind == "forked",
            "turn {} ran {kind} ({why}): {kinds:?}",
            k + 1
        );
    }
    let msgs: Vec<String> = (1..=n).map(|k| format!("message {k}")).collect();
    assert_one_copy_of_history(&w, &msgs, &replies);
    if kinds.iter().all(|(k, _)| k != "forked") {
        assert!(sessions.iter().all(|s| *s == sessions[0]), "{sessions:?}");
        assert_session_holds_each_message_once(&w, sessions[0], &msgs);
    }
}

#[test]
fn python_sdk_one_query_per_turn_is_resumed_from_turn_2() {
    replay_is_resumed(Sdk::Python, "replay");
}

#[test]
fn typescript_sdk_one_query_per_turn_is_resumed_from_turn_2() {
    replay_is_resumed(Sdk::TypeScript, "replay");
}

#[test]
fn python_sdk_starting_the_next_turn_at_the_result_is_resumed() {
    replay_is_resumed(Sdk::Python, "eager");
}

#[test]
fn typescript_sdk_starting_the_next_turn_at_the_result_is_resumed() {
    replay_is_resumed(Sdk::TypeScript, "eager");
}

/// One client session, one CLI process, several messages: the client gets the same
/// messages through the shim as without it (ids, timings and paths masked).
fn session_is_unchanged(sdk: Sdk) {
    let n = 3;
    let direct = SdkWorld::new();
    let real = direct.sb.real_bin.join("claude");
    let out = run(direct.client(sdk, "session", n, &real, "message {k}"), b"");
    let (d_turns, d_msgs) = lines(&out);
    let shimmed = SdkWorld::new();
    let (s_turns, s_msgs) = shimmed.run_client(sdk, "session", n, "message {k}");
    assert_eq!(replies(&d_turns, n), replies(&s_turns, n));
    assert_eq!(direct.masked(&d_msgs), shimmed.masked(&s_msgs));
    assert!(d_msgs.len() >= 3 * n, "{d_msgs:?}");
    // One process answered every message: the shim pinned nothing of it.
    let runs = shimmed.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_asked_the_same(&format!("{sdk:?} session"), &direct, &shimmed);
}

/// The model was asked the same directly and through the shim: every field of
/// every main request, `messages` aside (see `support::requests`).
fn assert_asked_the_same(what: &str, direct: &World, shimmed: &World) {
    requests::assert_same(
        what,
        &Asked::of(&direct.sb, &direct.server.requests()),
        &Asked::of(&shimmed.sb, &shimmed.server.requests()),
        &[],
    );
}

/// One `query()` per turn, each its own CLI without the shim; through it, the
/// later turns in the conversation's live CLI: the model is asked the same.
fn queries_ask_the_model_as_directly(sdk: Sdk) {
    let n = 4;
    // The newest message's reply, whatever the transcript around it.
    let newest_world = || {
        let w = SdkWorld::new();
        w.server.set_reply(|req: &LoggedRequest| {
            let text = req.last_user_text().unwrap_or_default();
            format!(
                "reply: {}",
                text.rsplit("Human: ").next().unwrap_or_default()
            )
        });
        w
    };
    let direct = newest_world();
    let real = direct.sb.real_bin.join("claude");
    let out = run(direct.client(sdk, "replay", n, &real, "message {k}"), b"");
    let (d_turns, _) = lines(&out);
    let shimmed = newest_world();
    let (s_turns, _) = shimmed.run_client(sdk, "replay", n, "message {k}");
    assert_eq!(replies(&d_turns, n), replies(&s_turns, n));
    let engines = shimmed.engines();
    assert!(engines.iter().any(|e| e == "warm"), "{engines:?}");
    assert_asked_the_same(&format!("{sdk:?} queries {engines:?}"), &direct, &shimmed);
}

#[test]
fn python_sdk_queries_ask_the_model_as_directly() {
    queries_ask_the_model_as_directly(Sdk::Python);
}

#[test]
fn typescript_sdk_queries_ask_the_model_as_directly() {
    queries_ask_the_model_as_directly(Sdk::TypeScript);
}

/// Costs are the same figures in both, but their float text may differ in the last
/// digit between runs: compare them to 6 places.
fn mask_costs(s: &str) -> String {
    let mut v: Value = serde_json::from_str(s).unwrap();
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if k.contains("cost") || k.contains("Cost") {
                        if let Some(f) = x.as_f64() {
                            *x = Value::String(format!("{f:.6}"));
                            continue;
                        }
                    }
                    walk(x);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v.to_string()
}

#[test]
fn python_sdk_client_session_sees_the_same_messages_through_the_shim() {
    session_is_unchanged(Sdk::Python);
}

#[test]
fn typescript_sdk_streaming_session_sees_the_same_messages_through_the_shim() {
    session_is_unchanged(Sdk::TypeScript);
}

/// A claude-max-api-proxy-style caller that passes `--no-session-persistence` on every
/// call, with the transcript as the positional prompt. Returns the replies.
fn ephemeral_conversation(w: &World, msgs: &[String]) -> Vec<String> {
    let mut chat = Chat::new(Client::MaxProxy);
    chat.args = vec!["--no-session-persistence".into()];
    for m in msgs {
        let mut cmd = w.sb.shim();
        let input = chat.prepare(&mut cmd, m);
        let out = run(cmd, input);
        assert!(out.status.success(), "{}", describe(&out));
        chat.keep(m, &out);
    }
    chat.history.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn a_caller_without_persistence_is_resumed_and_its_sessions_go_after_the_ttl() {
    let mut w = SdkWorld::new();
    w.sb.set_env("CLAUDE_SHIM_EPHEMERAL_TTL", "3s");
    let msgs: Vec<String> = (1..=4).map(|k| format!("ephemeral {k}")).collect();
    ephemeral_conversation(&w, &msgs);
    let kinds = w.runs();
    let kinds: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["fresh", "resumed", "resumed", "resumed"]);
    // Each request carries each message once: the new one is its last user text.
    for (k, req) in w.server.main_requests().iter().enumerate() {
        let users = req.user_texts();
        assert_eq!(users.len(), k + 1, "request {}: {users:?}", k + 1);
        assert!(users[k].ends_with(&msgs[k]), "{users:?}");
    }
    let files = w.sb.session_files();
    assert_eq!(files.len(), 1, "one session, owned by the shim: {files:?}");
    // Idle past the TTL: the next managed turn (any) sweeps it away.
    std::thread::sleep(std::time::Duration::from_millis(5000));
    let out = run(w.sb.shimmed(["-p", "an unrelated question"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        !files[0].exists(),
        "{} outlived its TTL",
        files[0].display()
    );
    let db = rusqlite::Connection::open(w.sb.shim_home.join("shim.db")).unwrap();
    let ephemeral: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sessions WHERE ephemeral = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ephemeral, 0, "the shim forgot the removed session");
    assert_eq!(
        w.sb.session_files().len(),
        1,
        "the unrelated turn's own session stays"
    );
}

#[test]
fn with_persistence_respected_a_caller_without_it_is_left_alone() {
    let mut w = SdkWorld::new();
    w.sb.set_env("CLAUDE_SHIM_PERSISTENCE", "respect");
    let msgs: Vec<String> = (1..=3).map(|k| format!("respected {k}")).collect();
    ephemeral_conversation(&w, &msgs);
    assert!(
        w.sb.session_files().is_empty(),
        "{:?}",
        w.sb.session_files()
    );
    assert!(
        !w.sb.shim_home.join("shim.db").exists() || w.runs().is_empty(),
        "passed through: not managed"
    );
    // Replayed every turn: request k carries all k messages in one prompt.
    let main = w.server.main_requests();
    assert_eq!(main[2].user_texts().len(), 1);
    assert!(main[2].user_texts()[0].contains("respected 1"));
}

/// The Python SDK waits for the answer to `initialize` before it sends the
/// message. Once two starts in the same scope gave the same answer, the shim
/// gives it at once, so the message comes while the first CLI still starts;
/// every answer it gives is checked against the one the CLIs then give (a
/// difference is logged), and the turns resume as before.
#[test]
fn python_sdk_initialize_is_answered_at_once_after_two_starts_agreed() {
    let mut w = SdkWorld::new();
    // Its second conversation takes a ready CLI: the remembered answer and
    // a CLI started ahead of the message meet.
    w.sb.ready_clis();
    let log = w.sb.root.join("shim.log");
    let n = 5;
    let (turns, _) = w.run_client(Sdk::Python, "replay", n, "message {k}");
    let replies = replies(&turns, n);
    let kinds = w.runs();
    assert_eq!(kinds.len(), n, "{kinds:?}");
    assert!(kinds[1..].iter().all(|(k, _)| k == "resumed"), "{kinds:?}");
    let msgs: Vec<String> = (1..=n).map(|k| format!("message {k}")).collect();
    assert_one_copy_of_history(&w, &msgs, &replies);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let at_once = text.matches("initialize answered at once").count();
    assert_eq!(at_once, n - 2, "turns 3..{n} answered at once\n{text}");
    let errors = || std::fs::read_to_string(w.sb.shim_home.join("errors.log")).unwrap_or_default();
    assert!(!errors().contains("initialize"), "{}", errors());

    // A remembered answer that no longer holds (here: altered on disk) is
    // given once, found out by the CLI's own answer and logged; the scope is
    // answered at once again only after two starts agreed.
    let dir = w.sb.shim_home.join("initialize");
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(f.path()).unwrap();
        let altered = text.replace(
            r#"\"output_style\":\"default\""#,
            r#"\"output_style\":\"altered\""#,
        );
        assert_ne!(text, altered, "{text}");
        std::fs::write(f.path(), altered).unwrap();
    }
    let (turns, _) = w.run_client(Sdk::Python, "replay", 3, "again {k}");
    assert_eq!(turns.len(), 3, "{turns:?}");
    let kinds = w.runs();
    assert_eq!(kinds.len(), n + 3, "{kinds:?}");
    assert_eq!(kinds[n].0, "fresh", "{kinds:?}");
    assert!(
        kinds[n + 1..].iter().all(|(k, _)| k == "resumed"),
        "{kinds:?}"
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let at_once = text.matches("initialize answered at once").count();
    assert_eq!(
        at_once,
        (n - 2) + 2,
        "turns 1 and 3 of the second run\n{text}"
    );
    assert_eq!(
        errors().matches("answer to initialize differs").count(),
        1,
        "{}",
        errors()
    );
}

/// A session client (one `ClaudeSDKClient`, its user typing a while before
/// each message) in a scope whose answer to `initialize` the shim gives at
/// once: no message follows the answer, so the CLI is started as the caller
/// asked — ready when the message comes, as without the shim — its own
/// answer dropped, and the session runs in it.
#[test]
fn python_sdk_session_client_that_waits_gets_its_cli_started_at_once() {
    let w = SdkWorld::new();
    let log = w.sb.root.join("shim.log");
    // Two starts agree: the scope's answer is given at once from now on.
    w.run_client(Sdk::Python, "replay", 2, "learn {k}");
    let mut cmd = w.client(Sdk::Python, "session", 2, &w.sb.shim_claude(), "typed {k}");
    cmd.args(["--think", "1"]);
    let out = run(cmd, b"");
    let (turns, _) = lines(&out);
    assert_eq!(turns.len(), 2, "{}", describe(&out));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        text.matches("initialize answered at once").count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches("no message yet; starting the CLI as asked")
            .count(),
        1,
        "{text}"
    );
    let kinds = w.runs();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert_eq!(kinds[2].0, "fresh", "{kinds:?}");
    let errors = std::fs::read_to_string(w.sb.shim_home.join("errors.log")).unwrap_or_default();
    assert!(!errors.contains("initialize"), "{errors}");
}

/// The answer to `initialize` depends on the files a start reads, flags'
/// files included: a `--settings FILE` whose contents changed is another
/// scope, so the shim never gives the answer it remembered for the old
/// contents (the CLI answers, with the new output style and permission
/// mode), and nothing differs afterwards.
#[test]
fn python_sdk_a_changed_settings_file_is_never_answered_from_memory() {
    let w = SdkWorld::new();
    let log = w.sb.root.join("shim.log");
    let settings = w.sb.work.join("team-settings.json");
    let write = |style: &str, mode: &str| {
        let text =
            format!(r#"{{"outputStyle":"{style}","permissions":{{"defaultMode":"{mode}"}}}}"#);
        std::fs::write(&settings, text).unwrap();
    };
    let info = |w: &SdkWorld, k: usize| -> Value {
        let mut cmd = w.client(
            Sdk::Python,
            "info",
            1,
            &w.sb.shim_claude(),
            &format!("q{k} {{k}}"),
        );
        cmd.arg("--settings").arg(&settings);
        let out = run(cmd, b"");
        let (lines, _) = lines(&out);
        assert!(
            lines
                .iter()
                .any(|l| l.get("turn").is_some() && l.get("error").is_none()),
            "{}",
            describe(&out)
        );
        lines
            .iter()
            .find_map(|l| l.get("info").cloned())
            .unwrap_or_else(|| panic!("no info line: {}", describe(&out)))
    };
    write("Explanatory", "acceptEdits");
    for k in 1..=3 {
        let got = info(&w, k);
        assert_eq!(got["output_style"], "Explanatory", "start {k}: {got}");
        assert_eq!(
            got["current_permission_mode"], "acceptEdits",
            "start {k}: {got}"
        );
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        text.matches("initialize answered at once").count(),
        1,
        "the third start was answered from memory\n{text}"
    );
    // Same path, other contents: the CLI's own answer, not the remembered one.
    write("Concise", "plan");
    let got = info(&w, 4);
    assert_eq!(got["output_style"], "Concise", "{got}");
    assert_eq!(got["current_permission_mode"], "plan", "{got}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        text.matches("initialize answered at once").count(),
        1,
        "not answered from memory after the change\n{text}"
    );
    let errors = std::fs::read_to_string(w.sb.shim_home.join("errors.log")).unwrap_or_default();
    assert!(!errors.contains("initialize"), "{errors}");
}

/// One `query()` per turn, each its own CLI start without the shim: through
/// it, once the answer to `initialize` is confirmed (two starts agreed), the
/// turns run in the conversation's live CLI, and the client gets every turn
/// answered, one copy of history sent to the model.
fn sdk_queries_run_warm(sdk: Sdk) {
    let w = SdkWorld::new();
    let n = 6;
    let (turns, _) = w.run_client(sdk, "replay", n, "message {k}");
    let replies = replies(&turns, n);
    let engines = w.engines();
    let msgs: Vec<String> = (1..=n).map(|k| format!("message {k}")).collect();
    assert_one_copy_of_history(&w, &msgs, &replies);
    // Two starts teach the answer; from then on every turn is warm.
    assert!(engines[3..].iter().all(|e| e == "warm"), "{engines:?}");
}

#[test]
fn python_sdk_queries_run_in_the_live_cli() {
    sdk_queries_run_warm(Sdk::Python);
}

#[test]
fn typescript_sdk_queries_run_in_the_live_cli() {
    sdk_queries_run_warm(Sdk::TypeScript);
}

/// A world whose model answers "write file K" with a Write call to
/// `out-K.txt` in the work directory, and the tool's result with text.
fn tools_world() -> SdkWorld {
    let w = SdkWorld::new();
    let work = w.sb.work.clone();
    w.server.set_reply(move |req: &LoggedRequest| {
        let last = req.messages().last().cloned().unwrap_or_default();
        let answered = last["content"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
        let text = req.last_user_text().unwrap_or_default();
        match text
            .rsplit("write file ")
            .next()
            .and_then(|k| k.trim().parse::<u32>().ok())
        {
            Some(k) if !answered => {
                let call = serde_json::json!({"name": "Write", "input": {
                    "file_path": work.join(format!("out-{k}.txt")).to_string_lossy(),
                    "content": format!("file {k}\n")}});
                format!("{TOOL_USE}{call}")
            }
            _ => "it is written".to_owned(),
        }
    });
    w
}

/// The permission callback and the PreToolUse hook of an SDK client that
/// sends one `query()` per turn are asked on warm turns exactly as without
/// the shim: the same calls, with the same inputs, and the tool runs.
fn sdk_callbacks_on_warm_turns(sdk: Sdk) {
    let n = 5;
    let prompt = "write file {k}";
    let direct = tools_world();
    let real = direct.sb.real_bin.join("claude");
    let (d_turns, _) = lines(&run(direct.client(sdk, "tools", n, &real, prompt), b""));
    let shimmed = tools_world();
    let (s_turns, _) = shimmed.run_client(sdk, "tools", n, prompt);
    let engines = shimmed.engines();
    assert!(engines[3..].iter().all(|e| e == "warm"), "{engines:?}");
    let callbacks = |w: &SdkWorld, turns: &[Value]| -> Vec<String> {
        turns
            .iter()
            .map(|t| w.sb.mask(&t["callbacks"].to_string()))
            .collect()
    };
    let (d, s) = (callbacks(&direct, &d_turns), callbacks(&shimmed, &s_turns));
    assert_eq!(d, s);
    for (k, calls) in s.iter().enumerate() {
        // Asked once each, permission and hook, for the turn's own file.
        assert!(
            calls.contains("\"permission\":\"Write\""),
            "turn {}: {calls}",
            k + 1
        );
        assert!(
            calls.contains("\"hook\":\"PreToolUse\""),
            "turn {}: {calls}",
            k + 1
        );
        assert!(calls.contains(&format!("out-{}.txt", k + 1)), "{calls}");
        let file = shimmed.sb.work.join(format!("out-{}.txt", k + 1));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("file {}\n", k + 1)
        );
    }
    assert_eq!(replies(&d_turns, n), replies(&s_turns, n));
}

#[test]
fn python_sdk_permission_callback_and_hook_run_on_warm_turns_as_cold() {
    sdk_callbacks_on_warm_turns(Sdk::Python);
}

#[test]
fn typescript_sdk_permission_callback_and_hook_run_on_warm_turns_as_cold() {
    sdk_callbacks_on_warm_turns(Sdk::TypeScript);
}

/// A world whose model echoes the last user text (whatever the request's number).
fn echo_world() -> SdkWorld {
    let w = SdkWorld::new();
    w.server.set_reply(|req: &LoggedRequest| {
        format!("echo: {}", req.last_user_text().unwrap_or_default())
    });
    w
}

/// Every message an SDK client gets is the same on warm turns as on cold ones
/// through the shim (ids, times, paths and costs masked): the same conversation,
/// with warm turns off and on.
fn sdk_warm_turns_give_the_messages_of_cold_ones(sdk: Sdk) {
    let n = 5;
    let mut cold = echo_world();
    cold.sb.set_env("CLAUDE_SHIM_WARM", "0");
    let warm = echo_world();
    let converse = |w: &SdkWorld| {
        let mut cmd = w.client(sdk, "replay", n, &w.sb.shim_claude(), "message {k}");
        cmd.arg("--messages");
        lines(&run(cmd, b""))
    };
    let (c_turns, c_msgs) = converse(&cold);
    let (w_turns, w_msgs) = converse(&warm);
    let (c_engines, w_engines) = (cold.engines(), warm.engines());
    assert!(w_engines[3..].iter().all(|e| e == "warm"), "{w_engines:?}");
    assert!(
        c_engines.iter().all(|e| e != "warm" && e != "live"),
        "{c_engines:?}"
    );
    assert_eq!(replies(&c_turns, n), replies(&w_turns, n));
    assert!(c_msgs.len() >= 2 * n, "{c_msgs:?}");
    assert_eq!(cold.masked(&c_msgs), warm.masked(&w_msgs));
}

#[test]
fn python_sdk_warm_turns_give_the_messages_of_cold_ones() {
    sdk_warm_turns_give_the_messages_of_cold_ones(Sdk::Python);
}

#[test]
fn typescript_sdk_warm_turns_give_the_messages_of_cold_ones() {
    sdk_warm_turns_give_the_messages_of_cold_ones(Sdk::TypeScript);
}

/// An SDK client's interrupt on a warm turn (its model call stalled) ends the
/// turn as it ends a cold CLI's without the shim: the same kinds of messages, the
/// same error result; the live CLI that was interrupted is not kept.
#[test]
fn typescript_sdk_interrupt_on_a_warm_turn_ends_it_as_without_the_shim() {
    let n = 5;
    let stalled = |w: &SdkWorld| {
        w.server.set_delay(|req: &LoggedRequest| {
            let last = req.last_user_text().unwrap_or_default();
            match last.ends_with("message 5") {
                true => std::time::Duration::from_secs(4),
                false => std::time::Duration::ZERO,
            }
        });
    };
    let direct = SdkWorld::new();
    stalled(&direct);
    let real = direct.sb.real_bin.join("claude");
    let mut cmd = direct.client(Sdk::TypeScript, "interrupt", n, &real, "message {k}");
    cmd.arg("--messages");
    let (d_turns, d_msgs) = lines(&run(cmd, b""));
    let shimmed = SdkWorld::new();
    stalled(&shimmed);
    let mut cmd = shimmed.client(
        Sdk::TypeScript,
        "interrupt",
        n,
        &shimmed.sb.shim_claude(),
        "message {k}",
    );
    cmd.arg("--messages");
    let (s_turns, s_msgs) = lines(&run(cmd, b""));
    let engines = shimmed.engines();
    assert_eq!(engines[n - 1], "warm", "{engines:?}");
    // The last turn's result: an error, as without the shim.
    let last = |t: &[Value]| (t[n - 1]["is_error"].clone(), t[n - 1]["subtype"].clone());
    assert_eq!(last(&d_turns), last(&s_turns));
    assert_eq!(last(&s_turns).0, true, "{s_turns:?}");
    // The interrupted turn's messages, kind by kind.
    let kinds = |m: &[Value]| -> Vec<String> {
        let from = m
            .iter()
            .rposition(|m| m["type"] == "system" && m["subtype"] == "init")
            .unwrap();
        m[from..]
            .iter()
            .map(|m| format!("{}/{}", m["type"], m["subtype"]))
            .collect()
    };
    assert_eq!(kinds(&d_msgs), kinds(&s_msgs));
    // The interrupted CLI is not kept: no live CLI holds the conversation's session.
    let mut cmd = std::process::Command::new(crate::support::shim_exe());
    cmd.args(["warm", "status", "--json"])
        .env_clear()
        .env("HOME", &shimmed.sb.home)
        .env("CLAUDE_SHIM_HOME", &shimmed.sb.shim_home);
    let out = run(cmd, b"");
    assert!(out.status.success(), "{}", describe(&out));
    let status: Value = serde_json::from_slice(&out.stdout).expect("status json");
    let session = s_turns[n - 1]["session_id"].as_str().unwrap();
    let live = status["keeper"]["live"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        live.iter()
            .all(|l| l["session"] != session || l["state"] == "stopping"),
        "{status}"
    );
}

/// A session client (one CLI for every message) whose first message is a
/// transcript runs in a live CLI through the shim once the answer to
/// `initialize` is known: it still gets what it gets without the shim —
/// each result numbered and costed as its own process's (ids, times, paths
/// masked; costs to 6 places).
fn session_in_a_live_cli_is_unchanged(sdk: Sdk) {
    let n = 3;
    let prompt = "Human: hello\n\nAssistant: hi there\n\nHuman: message {k}";
    let direct = echo_world();
    let real = direct.sb.real_bin.join("claude");
    let out = run(direct.client(sdk, "session", n, &real, prompt), b"");
    let (d_turns, d_msgs) = lines(&out);
    let shimmed = echo_world();
    // Two starts teach the shim the answer to `initialize`.
    shimmed.run_client(sdk, "replay", 2, "an earlier question {k}");
    let (s_turns, s_msgs) = shimmed.run_client(sdk, "session", n, prompt);
    let engines = shimmed.engines();
    assert!(
        matches!(engines.last().map(String::as_str), Some("live" | "ready")),
        "{engines:?}"
    );
    assert_eq!(replies(&d_turns, n), replies(&s_turns, n));
    // The test server numbers its messages: the shimmed world's earlier
    // conversation took the first numbers.
    let renumber = |m: Vec<String>| -> Vec<String> {
        m.into_iter()
            .map(|s| {
                let mut out = String::new();
                let mut rest = s.as_str();
                while let Some(at) = rest.find("msg_shimtest_") {
                    out.push_str(&rest[..at]);
                    out.push_str("msg_shimtest_N");
                    rest = rest[at + "msg_shimtest_".len()..]
                        .trim_start_matches(|c: char| c.is_ascii_digit());
                }
                out + rest
            })
            .collect()
    };
    let (d, s) = (
        renumber(direct.masked(&d_msgs)),
        renumber(shimmed.masked(&s_msgs)),
    );
    assert!(d.len() >= 3 * n, "{d:?}");
    assert_eq!(d, s);
    // The shimmed world's earlier conversation asked first.
    let earlier = shimmed
        .server
        .requests()
        .iter()
        .filter(|r| r.is_main() && !r.user_texts().iter().any(|t| t.contains("message ")))
        .count();
    let later: Vec<_> = shimmed
        .server
        .requests()
        .into_iter()
        .filter(|r| r.is_main())
        .skip(earlier)
        .collect();
    requests::assert_same(
        &format!("{sdk:?} session in a live CLI"),
        &Asked::of(&direct.sb, &direct.server.requests()),
        &Asked::of(&shimmed.sb, &later),
        &[],
    );
}

#[test]
fn python_sdk_session_in_a_live_cli_is_unchanged() {
    session_in_a_live_cli_is_unchanged(Sdk::Python);
}

#[test]
fn typescript_sdk_session_in_a_live_cli_is_unchanged() {
    session_in_a_live_cli_is_unchanged(Sdk::TypeScript);
}

/// A world whose model answers the newest line of the last user text: a message
/// and the transcript that re-sends it with the same newest line get the same reply.
fn newest_line_world() -> SdkWorld {
    let w = SdkWorld::new();
    w.server.set_reply(|req: &LoggedRequest| {
        let last = req.last_user_text().unwrap_or_default();
        format!("noted: {}", last.lines().last().unwrap_or("").trim())
    });
    w
}

/// What a client got, as compared with and without the shim: each message's class
/// and its text (an assistant's content, a result's reply). The Python SDK's
/// messages are dataclasses (`class`), the TypeScript SDK's the CLI's lines (`type`).
fn gist(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let class = m["class"].as_str().or(m["type"].as_str()).unwrap_or("?");
            let text = match class {
                "AssistantMessage" => m["content"].to_string(),
                "assistant" => m["message"]["content"].to_string(),
                "ResultMessage" | "result" => m["result"].to_string(),
                _ => String::new(),
            };
            format!("{class} {text}")
        })
        .collect()
}

/// How many user text blocks of each main request hold the first message.
fn copies_of_first(w: &World) -> Vec<usize> {
    w.server
        .main_requests()
        .iter()
        .map(|r| {
            let texts = r.user_texts();
            texts.iter().filter(|t| t.contains("message 1")).count()
        })
        .collect()
}

/// The reason the runs log gives for its newest turn (`claude-shim log --json`).
fn last_logged_why(w: &World) -> String {
    let out = run(w.sb.cli(&["log", "--json", "--limit", "1"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["turns"][0]["why"].as_str().unwrap_or_default().to_owned()
}

/// How a router test runs (see [`router_session`]).
#[derive(Clone, Copy, Default)]
struct Router {
    /// In a live CLI: its first message a transcript the shim reads (`Human: …`).
    warm: bool,
    /// Each replayed reply with a byte added: nothing may be cut.
    edit: bool,
    /// No `[System: …]` line: the first message holds no `]` (the `]` after a
    /// reply closes the `[` of its label).
    bare: bool,
    /// `CLAUDE_SHIM_RESEND=keep` through the shim: nothing is cut.
    kept: bool,
}

/// A router keeps one Agent SDK session (one CLI) and sends each call's whole
/// transcript as the next message. Without the shim the model gets k copies of the
/// first message at turn k; through it, each message once (cold, or in a live CLI),
/// and the client gets the same messages. With `edit` or `kept` nothing is cut: the
/// model gets what it gets without the shim.
fn router_session(sdk: Sdk, r: Router) {
    let Router {
        warm,
        edit,
        bare,
        kept,
    } = r;
    let n = 4;
    let (first, label) = match (warm, bare) {
        (true, _) => ("Human: message 1", "Human: "),
        (false, true) => ("message 1", ""),
        (false, false) => ("[System: be brief]\n\nmessage 1", ""),
    };
    let client = |w: &SdkWorld, cli: &PathBuf| {
        let mut cmd = w.client(sdk, "router", n, cli, "message {k}");
        if edit {
            cmd.arg("--edit-replies");
        }
        if warm {
            cmd.args(["--labels", "human"]);
        } else if bare {
            cmd.args(["--labels", "bare"]);
        }
        lines(&run(cmd, b""))
    };
    let direct = newest_line_world();
    let (d_turns, d_msgs) = client(&direct, &direct.sb.real_bin.join("claude"));
    let mut shimmed = newest_line_world();
    if kept {
        shimmed.sb.set_env("CLAUDE_SHIM_RESEND", "keep");
    }
    if warm {
        // Two starts teach the shim the answer to `initialize`.
        shimmed.run_client(sdk, "replay", 2, "an earlier question {k}");
        shimmed.server.clear_log();
    }
    let (s_turns, s_msgs) = client(&shimmed, &shimmed.sb.shim_claude());
    let got = replies(&s_turns, n);
    assert_eq!(replies(&d_turns, n), got);
    assert_eq!(gist(&d_msgs), gist(&s_msgs));
    assert!(
        gist(&d_msgs)
            .iter()
            .filter(|g| g.starts_with("result") || g.starts_with("ResultMessage"))
            .count()
            == n,
        "{:?}",
        gist(&d_msgs)
    );
    if warm {
        let engines = shimmed.engines();
        assert!(
            matches!(engines.last().map(String::as_str), Some("live" | "ready")),
            "{engines:?}\n{}",
            shimmed.context()
        );
    }
    let k_copies: Vec<usize> = (1..=n).collect();
    assert_eq!(copies_of_first(&direct), k_copies);
    let why = last_logged_why(&shimmed);
    if edit || kept {
        assert_eq!(copies_of_first(&shimmed), k_copies, "{}", shimmed.context());
        let texts = |w: &World| -> Vec<Vec<String>> {
            let main = w.server.main_requests();
            main.iter().map(|r| r.user_texts()).collect()
        };
        assert_eq!(texts(&direct), texts(&shimmed));
        assert!(!why.contains("re-sent"), "{why}");
        return;
    }
    assert_eq!(
        copies_of_first(&shimmed),
        vec![1; n],
        "{}",
        shimmed.context()
    );
    for (k, req) in shimmed.server.main_requests().iter().enumerate() {
        let mut want = vec![first.to_owned()];
        want.extend((2..=k + 1).map(|i| format!("{label}message {i}")));
        assert_eq!(req.user_texts(), want, "request {}", k + 1);
        assert_eq!(req.assistant_texts(), got[..k], "request {}", k + 1);
    }
    assert!(why.contains("3 of 3 later messages re-sent"), "{why}");
}

#[test]
fn python_sdk_router_re_sending_its_transcript_reaches_the_model_once() {
    router_session(Sdk::Python, Router::default());
}

#[test]
fn python_sdk_router_re_sending_its_transcript_reaches_a_live_cli_once() {
    router_session(
        Sdk::Python,
        Router {
            warm: true,
            ..Router::default()
        },
    );
}

#[test]
fn python_sdk_router_whose_transcript_differs_by_a_byte_passes_unchanged() {
    router_session(
        Sdk::Python,
        Router {
            edit: true,
            ..Router::default()
        },
    );
}

/// The first message holds no `]`: turn 2 is cut as the later ones are (issue 39,
/// item 3: it was passed whole).
#[test]
fn python_sdk_router_whose_first_message_has_no_bracket_is_cut_from_turn_2() {
    router_session(
        Sdk::Python,
        Router {
            bare: true,
            ..Router::default()
        },
    );
}

#[test]
fn typescript_sdk_router_re_sending_its_transcript_reaches_the_model_once() {
    router_session(Sdk::TypeScript, Router::default());
}

#[test]
fn typescript_sdk_router_re_sending_its_transcript_reaches_a_live_cli_once() {
    router_session(
        Sdk::TypeScript,
        Router {
            warm: true,
            ..Router::default()
        },
    );
}

#[test]
fn typescript_sdk_router_whose_transcript_differs_by_a_byte_passes_unchanged() {
    router_session(
        Sdk::TypeScript,
        Router {
            edit: true,
            ..Router::default()
        },
    );
}

/// `CLAUDE_SHIM_RESEND=keep`: a router's re-sent transcripts pass whole, and the
/// model gets what it gets without the shim (k copies of the first message at
/// turn k).
#[test]
fn python_sdk_router_with_cutting_switched_off_passes_every_message_whole() {
    router_session(
        Sdk::Python,
        Router {
            kept: true,
            ..Router::default()
        },
    );
}
