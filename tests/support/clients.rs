//! How real clients render a replayed turn (`shared/dialects.md`), shared by
//! the dialect e2e tests and the cost bench: each renderer takes the prior
//! (user, reply) pairs and the new user message and returns (argv, stdin).

use serde_json::{json, Value};

use super::api::ApiServer;

/// Prior (user, reply) pairs and the new user message → (argv, stdin).
pub type Render = fn(&[(String, String)], &str) -> (Vec<String>, Vec<u8>);

/// The reply a text-output client keeps: stdout, trimmed.
pub fn text_reply(out: &[u8]) -> String {
    String::from_utf8_lossy(out).trim().to_owned()
}

/// The reply a stream-json client keeps: the final `result`.
pub fn result_reply(out: &[u8]) -> String {
    result_event(out)["result"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no result text in {}", String::from_utf8_lossy(out)))
}

/// The `result` event of stream-json output.
pub fn result_event(out: &[u8]) -> Value {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| panic!("no result event in {}", String::from_utf8_lossy(out)))
}

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `{user}: u` / `Assistant: a` turns joined by `join`, ending with the new message.
pub fn labels(history: &[(String, String)], cur: &str, user: &str, join: &str) -> String {
    let mut parts = Vec::new();
    for (u, a) in history {
        parts.push(format!("{user}: {u}"));
        parts.push(format!("Assistant: {a}"));
    }
    parts.push(format!("{user}: {cur}"));
    parts.join(join)
}

/// One stream-json input line carrying `text` with `role`.
pub fn user_line(text: &str, role: &str) -> String {
    json!({"type": "user", "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
}

/// The Anthropic `[{role, content}]` array of a conversation (Cline).
pub fn messages_json(h: &[(String, String)], cur: &str) -> Vec<Value> {
    let mut msgs = Vec::new();
    for (u, a) in h {
        msgs.push(json!({"role": "user", "content": [{"type": "text", "text": u}]}));
        msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": a}]}));
    }
    msgs.push(json!({"role": "user", "content": [{"type": "text", "text": cur}]}));
    msgs
}

/// A server whose replies stay on one line. The default reply echoes the
/// start of the prompt, which for a transcript may put a line reading like a
/// role marker into the reply (tested on its own in e2e_dialects).
pub fn one_line_server() -> ApiServer {
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

pub const LANGCHAIN_ARGS: &[&str] = &["-p", "--output-format", "stream-json", "--verbose"];
pub const OPEN_DESIGN_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--permission-mode",
    "default",
];
pub const MAXPROXY_ARGS: &[&str] = &[
    "--print",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--model",
    "claude-sonnet-4-5",
];
pub const CLINE_ARGS: &[&str] = &[
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
];
pub const LINES_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// OpenAI-compatible wrapper: `Human:`/`Assistant:` joined by blank lines, stdin.
pub fn wrapper(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    (args(&["-p"]), labels(h, cur, "Human", "\n\n").into_bytes())
}

/// Small relay: a `System:` line, single newlines, a trailing `Assistant:` cue.
pub fn relay(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let prompt = format!(
        "System: be brief\n{}\nAssistant:",
        labels(h, cur, "Human", "\n")
    );
    (
        args(&["-p", "--output-format", "text"]),
        prompt.into_bytes(),
    )
}

/// LangChain: first turn bare, then `User:`/`Assistant:`; positional after `--`.
pub fn langchain(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let prompt = if h.is_empty() {
        cur.to_owned()
    } else {
        labels(h, cur, "User", "\n\n")
    };
    let mut a = args(LANGCHAIN_ARGS);
    a.extend(["--".to_owned(), prompt]);
    (a, Vec::new())
}

/// Open Design: markdown headings inside an instructions wrapper, one
/// stream-json input line.
pub fn open_design(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
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
    (
        args(OPEN_DESIGN_ARGS),
        format!("{}\n", user_line(&payload, "user")).into_bytes(),
    )
}

/// claude-max-api-proxy: `<system>` and `<previous_response>`, positional.
pub fn maxproxy(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let mut parts = vec!["<system>\nYou are terse.\n</system>\n".to_string()];
    for (u, a) in h {
        parts.push(u.clone());
        parts.push(format!("<previous_response>\n{a}\n</previous_response>\n"));
    }
    parts.push(cur.to_owned());
    let mut a = args(MAXPROXY_ARGS);
    a.push(parts.join("\n").trim().to_owned());
    (a, Vec::new())
}

/// Cline: the messages array as JSON on stdin.
pub fn cline(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let body = serde_json::to_vec(&messages_json(h, cur)).expect("json");
    (args(CLINE_ARGS), body)
}

/// Roo Code on Windows: `{systemPrompt, messages}` on stdin.
pub fn roo(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let body = json!({"systemPrompt": "You are Roo.", "messages": messages_json(h, cur)});
    (args(CLINE_ARGS), serde_json::to_vec(&body).expect("json"))
}

/// One stream-json input line per message.
pub fn stream_lines(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let mut lines = Vec::new();
    for (u, a) in h {
        lines.push(user_line(u, "user"));
        lines.push(user_line(a, "assistant"));
    }
    lines.push(user_line(cur, "user"));
    (
        args(LINES_ARGS),
        format!("{}\n", lines.join("\n")).into_bytes(),
    )
}

/// `[User]`/`[Assistant]` labels (the generic recogniser), stdin.
pub fn bracket(h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
    let mut parts = Vec::new();
    for (u, a) in h {
        parts.push(format!("[User]\n{u}"));
        parts.push(format!("[Assistant]\n{a}"));
    }
    parts.push(format!("[User]\n{cur}"));
    (args(&["-p"]), parts.join("\n\n").into_bytes())
}
