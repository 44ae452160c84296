//! One end-to-end test per dialect of `shared/dialects.md`, through the REAL
//! Claude Code CLI and the loopback API server: a client that replays the
//! whole conversation every turn, rendered exactly as that client renders it.
//! From turn 2 on every logged request must carry each earlier user message
//! once, the new one once, and no replayed assistant text inside a user
//! message (one copy of history).

mod support;

use serde_json::{json, Value};
use support::{describe, run, ApiServer, Sandbox};

const TURNS: usize = 6;

/// Given the prior (user, reply) pairs and the new user message: (argv, stdin).
type Render = fn(&[(String, String)], &str) -> (Vec<String>, Vec<u8>);

/// How one client renders a turn: argv, stdin, and where its reply comes from.
struct Client {
    name: &'static str,
    call: Render,
    /// The reply the client keeps from the CLI's stdout.
    reply: fn(&[u8]) -> String,
}

fn text_reply(out: &[u8]) -> String {
    String::from_utf8_lossy(out).trim().to_owned()
}

/// The final `result` of stream-json output.
fn result_reply(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .and_then(|v| v["result"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no result event in {}", String::from_utf8_lossy(out)))
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn labels(history: &[(String, String)], cur: &str, user: &str, join: &str) -> String {
    let mut parts = Vec::new();
    for (u, a) in history {
        parts.push(format!("{user}: {u}"));
        parts.push(format!("Assistant: {a}"));
    }
    parts.push(format!("{user}: {cur}"));
    parts.join(join)
}

fn user_line(text: &str, role: &str) -> String {
    json!({"type": "user", "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
}

/// A server whose replies stay on one line. The default reply echoes the
/// start of the prompt, which for a transcript would put a line reading
/// `Human: …` into the reply — a reply no label dialect can tell from a turn
/// (the shim then runs fresh, safely; tested in the unit tests).
fn server() -> ApiServer {
    let server = ApiServer::start();
    server.set_reply(|r| {
        let echo: String = r
            .last_user_text()
            .unwrap_or_default()
            .chars()
            .take(40)
            .collect();
        format!("reply {}: {}", r.index, echo.replace(['\n', '\r'], " "))
    });
    server
}

/// Drive `TURNS` turns of `client` through the shim and check every request.
fn conversation(client: &Client) {
    conversation_on(server(), client)
}

fn conversation_on(server: ApiServer, client: &Client) {
    let sandbox = Sandbox::new(&server);
    let mut history: Vec<(String, String)> = Vec::new();
    for turn in 1..=TURNS {
        let current = format!("{} question {turn} zebra{turn}", client.name);
        let (argv, stdin) = (client.call)(&history, &current);
        let out = run(sandbox.shimmed(&argv), &stdin);
        assert!(
            out.status.success(),
            "{} turn {turn}: {}",
            client.name,
            describe(&out)
        );
        assert!(
            out.stderr.is_empty(),
            "{} turn {turn}: {}",
            client.name,
            describe(&out)
        );
        let reply = (client.reply)(&out.stdout);
        assert!(
            reply.starts_with(&format!("reply {turn}:")),
            "{} turn {turn}: reply {reply:?}",
            client.name
        );

        let requests = server.main_requests();
        assert_eq!(
            requests.len(),
            turn,
            "{}: one request per turn",
            client.name
        );
        let texts = requests[turn - 1].user_texts();
        if turn > 1 {
            assert_eq!(
                texts.len(),
                turn,
                "{} turn {turn}: user messages {texts:#?}",
                client.name
            );
            for (k, (u, a)) in history.iter().enumerate() {
                let holding: Vec<usize> = texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.contains(u.as_str()))
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(
                    holding,
                    [k],
                    "{} turn {turn}: {u:?} once, in message {k}: {texts:#?}",
                    client.name
                );
                assert!(
                    texts.iter().all(|t| !t.contains(a.as_str())),
                    "{} turn {turn}: a reply replayed inside a user message: {texts:#?}",
                    client.name
                );
            }
            let last = texts.last().map(String::as_str).unwrap_or("");
            assert!(
                last.contains(&current),
                "{} turn {turn}: new text last: {texts:#?}",
                client.name
            );
            assert_eq!(
                texts.iter().filter(|t| t.contains(&current)).count(),
                1,
                "{} turn {turn}: {texts:#?}",
                client.name
            );
        }
        history.push((current, reply));
    }
    // Linear turns stay in one session.
    let sessions: Vec<Option<String>> = server
        .main_requests()
        .iter()
        .map(|r| r.session_id())
        .collect();
    assert!(
        sessions.windows(2).all(|w| w[0] == w[1]),
        "{}: sessions {sessions:?}",
        client.name
    );
    let db = rusqlite::Connection::open(sandbox.shim_home.join("shim.db")).expect("open shim.db");
    let kinds: Vec<String> = db
        .prepare("SELECT kind FROM runs ORDER BY id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("runs");
    let mut want = vec!["fresh".to_string()];
    want.extend(std::iter::repeat_n("resumed".to_string(), TURNS - 1));
    assert_eq!(kinds, want, "{}", client.name);
}

#[test]
fn openai_wrapper_human_assistant() {
    conversation(&Client {
        name: "wrapper",
        call: |h, cur| (args(&["-p"]), labels(h, cur, "Human", "\n\n").into_bytes()),
        reply: text_reply,
    });
}

#[test]
fn relay_system_line_single_newlines_and_cue() {
    conversation(&Client {
        name: "relay",
        call: |h, cur| {
            let prompt = format!(
                "System: be brief\n{}\nAssistant:",
                labels(h, cur, "Human", "\n")
            );
            (
                args(&["-p", "--output-format", "text"]),
                prompt.into_bytes(),
            )
        },
        reply: text_reply,
    });
}

/// The server's default reply echoes the prompt's start, so each reply holds
/// a line reading `Human: …`: the parser must keep it inside the reply.
#[test]
fn relay_with_replies_that_quote_role_markers() {
    conversation_on(
        ApiServer::start(),
        &Client {
            name: "quoting",
            call: |h, cur| {
                let prompt = format!(
                    "System: be brief\n{}\nAssistant:",
                    labels(h, cur, "Human", "\n")
                );
                (args(&["-p"]), prompt.into_bytes())
            },
            reply: text_reply,
        },
    );
}

#[test]
fn langchain_user_assistant_positional() {
    conversation(&Client {
        name: "langchain",
        call: |h, cur| {
            let prompt = if h.is_empty() {
                cur.to_owned()
            } else {
                labels(h, cur, "User", "\n\n")
            };
            (
                args(&[
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--",
                    &prompt,
                ]),
                Vec::new(),
            )
        },
        reply: result_reply,
    });
}

#[test]
fn open_design_markdown_headings_stream_json() {
    conversation(&Client {
        name: "opendesign",
        call: |h, cur| {
            let mut msgs = Vec::new();
            for (u, a) in h {
                msgs.push(format!("## user\n{u}"));
                msgs.push(format!("## assistant\n{a}"));
            }
            msgs.push(format!("## user\n{cur}"));
            let payload = format!(
                "# Instructions (read first)\n\nYou design pages.\n\n---\n\nUse the tokens.\n\n---\n# User request\n\n{}",
                msgs.join("\n\n")
            );
            let argv = args(&[
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-mode",
                "default",
            ]);
            (
                argv,
                format!("{}\n", user_line(&payload, "user")).into_bytes(),
            )
        },
        reply: result_reply,
    });
}

#[test]
fn max_api_proxy_previous_response_positional() {
    conversation(&Client {
        name: "maxproxy",
        call: |h, cur| {
            let mut parts = vec!["<system>\nYou are terse.\n</system>\n".to_string()];
            for (u, a) in h {
                parts.push(u.clone());
                parts.push(format!("<previous_response>\n{a}\n</previous_response>\n"));
            }
            parts.push(cur.to_owned());
            let prompt = parts.join("\n").trim().to_owned();
            let argv = args(&[
                "--print",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--model",
                "claude-sonnet-4-5",
                &prompt,
            ]);
            (argv, Vec::new())
        },
        reply: result_reply,
    });
}

fn messages_json(h: &[(String, String)], cur: &str) -> Vec<Value> {
    let mut msgs = Vec::new();
    for (u, a) in h {
        msgs.push(json!({"role": "user", "content": [{"type": "text", "text": u}]}));
        msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": a}]}));
    }
    msgs.push(json!({"role": "user", "content": [{"type": "text", "text": cur}]}));
    msgs
}

fn cline_args() -> Vec<String> {
    args(&[
        "--system-prompt",
        "You are Cline.",
        "--verbose",
        "--output-format",
        "stream-json",
        "--disallowedTools",
        "Bash",
        "Edit",
        "--max-turns",
        "1",
        "--model",
        "claude-sonnet-4-5",
        "-p",
    ])
}

#[test]
fn cline_json_messages_array() {
    conversation(&Client {
        name: "cline",
        call: |h, cur| {
            (
                cline_args(),
                serde_json::to_vec(&messages_json(h, cur)).unwrap(),
            )
        },
        reply: result_reply,
    });
}

#[test]
fn roo_system_prompt_wrapper() {
    conversation(&Client {
        name: "roo",
        call: |h, cur| {
            let body = json!({"systemPrompt": "You are Roo.", "messages": messages_json(h, cur)});
            (cline_args(), serde_json::to_vec(&body).unwrap())
        },
        reply: result_reply,
    });
}

#[test]
fn stream_json_line_per_message() {
    conversation(&Client {
        name: "streamlines",
        call: |h, cur| {
            let mut lines = Vec::new();
            for (u, a) in h {
                lines.push(user_line(u, "user"));
                lines.push(user_line(a, "assistant"));
            }
            lines.push(user_line(cur, "user"));
            let argv = args(&[
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ]);
            (argv, format!("{}\n", lines.join("\n")).into_bytes())
        },
        reply: result_reply,
    });
}

#[test]
fn generic_bracket_labels() {
    conversation(&Client {
        name: "bracket",
        call: |h, cur| {
            let mut parts = Vec::new();
            for (u, a) in h {
                parts.push(format!("[User]\n{u}"));
                parts.push(format!("[Assistant]\n{a}"));
            }
            parts.push(format!("[User]\n{cur}"));
            (args(&["-p"]), parts.join("\n\n").into_bytes())
        },
        reply: text_reply,
    });
}

/// The AI-SDK provider: Agent SDK mode (no -p), a control_request line
/// before the user message, `--resume=<id>` of the session it saw last, and
/// STILL the whole transcript. The session must end up with one copy.
#[test]
fn agent_sdk_caller_resume_with_replayed_transcript() {
    let server = server();
    let sandbox = Sandbox::new(&server);
    let control = r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}"#;
    let mut history: Vec<(String, String)> = Vec::new();
    let mut session: Option<String> = None;
    for turn in 1..=TURNS {
        let current = format!("aisdk question {turn} zebra{turn}");
        let transcript = format!(
            "You are helpful.\n\n{}",
            labels(&history, &current, "Human", "\n\n")
        );
        let line = json!({"type": "user", "session_id": "", "message": {"role": "user", "content": [{"type": "text", "text": transcript}]}, "parent_tool_use_id": null});
        let mut argv = args(&[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--max-thinking-tokens",
            "0",
            "--setting-sources",
            "",
        ]);
        if let Some(s) = &session {
            argv.push(format!("--resume={s}"));
        }
        let out = run(
            sandbox.shimmed(&argv),
            format!("{control}\n{line}\n").as_bytes(),
        );
        assert!(out.status.success(), "turn {turn}: {}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The control response reaches the SDK, first, untouched.
        let first: Value = serde_json::from_str(stdout.lines().next().unwrap_or("")).unwrap();
        assert_eq!(first["type"], "control_response", "turn {turn}: {stdout}");
        assert_eq!(first["response"]["request_id"], "req_1");
        let result = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "result")
            .expect("result");
        let sid = result["session_id"].as_str().unwrap().to_owned();
        if let Some(s) = &session {
            assert_eq!(&sid, s, "the caller's session continues");
        }
        session = Some(sid);
        history.push((current, result["result"].as_str().unwrap().to_owned()));
    }
    // One copy of history in the session file: each user text once.
    let file = sandbox
        .session_file(session.as_deref().unwrap())
        .expect("session file");
    let body = std::fs::read_to_string(file).unwrap();
    let user_records: Vec<Value> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "user")
        .collect();
    for (u, _) in &history {
        let n = user_records
            .iter()
            .filter(|r| r["message"].to_string().contains(u.as_str()))
            .count();
        assert_eq!(
            n,
            1,
            "{u:?} once in the session; records: {}",
            user_records.len()
        );
    }
    // And the last request carried the history once.
    let texts = server.main_requests().last().unwrap().user_texts();
    assert_eq!(texts.len(), TURNS, "{texts:#?}");
}
