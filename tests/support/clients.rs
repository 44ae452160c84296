//! The one client model of every suite and of the cost bench: how real
//! clients (`shared/dialects.md`) render a replayed turn — the prior (user,
//! reply) pairs and the new message — into argv and stdin, and how they read
//! the reply from stdout; and [`Chat`], one conversation as a client keeps it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use super::api::ApiServer;
use super::process::{Input, Ran};

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
/// role marker into the reply (tested on its own in `tests/e2e/dialects.rs`).
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
/// A LiteLLM-style provider: the prompt right after `-p`, JSON out, no
/// tools, no session kept.
pub const BRACKET_ROLES_ARGS: &[&str] = &[
    "-p",
    "--output-format",
    "json",
    "--no-session-persistence",
    "--tools",
    "",
];
pub const LINES_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// A client that replays its whole transcript every turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// OpenAI-compatible wrapper: `Human:`/`Assistant:` joined by blank lines,
    /// on stdin, `-p`, text output.
    Wrapper,
    /// Small relay: a `System:` line, single newlines, a trailing `Assistant:`
    /// cue; stdin, text output.
    Relay,
    /// LangChain: first turn bare, then `User:`/`Assistant:`; positional after
    /// `--`, stream-json output.
    LangChain,
    /// Open Design: markdown headings inside an instructions wrapper, one
    /// stream-json input line.
    OpenDesign,
    /// claude-max-api-proxy: `<system>` and `<previous_response>`, positional.
    MaxProxy,
    /// Cline: the messages array as JSON on stdin, `--system-prompt`.
    Cline,
    /// Roo Code on Windows: `{systemPrompt, messages}` on stdin.
    Roo,
    /// One stream-json input line per message.
    StreamLines,
    /// `[User]`/`[Assistant]` labels (the generic recogniser), stdin.
    Bracket,
    /// A fixed marker line before each earlier reply, user turns bare: no
    /// dialect reads it; continuation by content does. Stdin, text output.
    AssistantMarker,
    /// One stream-json user message of several text blocks: a preamble
    /// block, then a block per turn with its own bracketed label.
    MultiBlock,
    /// `<user>…</user>` / `<assistant>…</assistant>`, stdin, text output.
    XmlTags,
    /// A LiteLLM-style library: `[System instruction: …]`, `[User: …]`,
    /// `[Assistant: …]` joined by blank lines, positional, JSON output.
    BracketRoles,
    /// One stream-json user message: a preamble block, a block per earlier
    /// message with a one-symbol role mark (`> q`, `< a`), the new one bare.
    MarkBlocks,
    /// As [`Client::MarkBlocks`] with marks that look like words (`u q`,
    /// `a r`), which only the structure shows to be marks (issue 39).
    WordMarkBlocks,
    /// The same as plain text on stdin, a line per message (issue 39).
    WordMarkText,
}

/// Where a client puts its prompt.
enum Delivery {
    Stdin,
    Positional,
    /// After `--`, so a prompt starting with `-` is not a flag.
    AfterDashes,
    /// Right after `-p`, before the other flags.
    AfterPrint,
}

impl Client {
    fn shape(self) -> (&'static [&'static str], Delivery) {
        match self {
            Client::Wrapper
            | Client::Bracket
            | Client::AssistantMarker
            | Client::XmlTags
            | Client::WordMarkText => (&["-p"], Delivery::Stdin),
            Client::Relay => (&["-p", "--output-format", "text"], Delivery::Stdin),
            Client::LangChain => (LANGCHAIN_ARGS, Delivery::AfterDashes),
            Client::OpenDesign => (OPEN_DESIGN_ARGS, Delivery::Stdin),
            Client::MaxProxy => (MAXPROXY_ARGS, Delivery::Positional),
            Client::Cline | Client::Roo => (CLINE_ARGS, Delivery::Stdin),
            Client::StreamLines
            | Client::MultiBlock
            | Client::MarkBlocks
            | Client::WordMarkBlocks => (LINES_ARGS, Delivery::Stdin),
            Client::BracketRoles => (BRACKET_ROLES_ARGS, Delivery::AfterPrint),
        }
    }

    /// Whether it reads stream-json output (else: text).
    pub fn streams(self) -> bool {
        !matches!(
            self,
            Client::Wrapper
                | Client::Relay
                | Client::Bracket
                | Client::AssistantMarker
                | Client::XmlTags
                | Client::BracketRoles
                | Client::WordMarkText
        )
    }

    /// The prompt (stdin bytes or the positional argument) for `current`
    /// after `history`.
    pub fn prompt(self, h: &[(String, String)], cur: &str) -> String {
        match self {
            Client::Wrapper => labels(h, cur, "Human", "\n\n"),
            Client::Relay => format!(
                "System: be brief\n{}\nAssistant:",
                labels(h, cur, "Human", "\n")
            ),
            Client::LangChain if h.is_empty() => cur.to_owned(),
            Client::LangChain => labels(h, cur, "User", "\n\n"),
            Client::OpenDesign => {
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
                format!("{}\n", user_line(&payload, "user"))
            }
            Client::MaxProxy => {
                let mut parts = vec!["<system>\nYou are terse.\n</system>\n".to_string()];
                for (u, a) in h {
                    parts.push(u.clone());
                    parts.push(format!("<previous_response>\n{a}\n</previous_response>\n"));
                }
                parts.push(cur.to_owned());
                parts.join("\n").trim().to_owned()
            }
            Client::Cline => serde_json::to_string(&messages_json(h, cur)).expect("json"),
            Client::Roo => {
                json!({"systemPrompt": "You are Roo.", "messages": messages_json(h, cur)})
                    .to_string()
            }
            Client::StreamLines => {
                let mut lines = Vec::new();
                for (u, a) in h {
                    lines.push(user_line(u, "user"));
                    lines.push(user_line(a, "assistant"));
                }
                lines.push(user_line(cur, "user"));
                format!("{}\n", lines.join("\n"))
            }
            Client::Bracket => {
                let mut parts = Vec::new();
                for (u, a) in h {
                    parts.push(format!("[User]\n{u}"));
                    parts.push(format!("[Assistant]\n{a}"));
                }
                parts.push(format!("[User]\n{cur}"));
                parts.join("\n\n")
            }
            Client::AssistantMarker => {
                let mut parts = Vec::new();
                for (u, a) in h {
                    parts.push(u.clone());
                    parts.push(format!("--- previous reply ---\n{a}"));
                }
                parts.push(cur.to_owned());
                parts.join("\n\n")
            }
            Client::MultiBlock => {
                let mut blocks = vec![json!({"type": "text", "text": "Continue this chat."})];
                for (u, a) in h {
                    blocks.push(json!({"type": "text", "text": format!("[user] {u}")}));
                    blocks.push(json!({"type": "text", "text": format!("[assistant] {a}")}));
                }
                blocks.push(json!({"type": "text", "text": format!("[user] {cur}")}));
                let line = json!({"type": "user", "message": {"role": "user", "content": blocks}});
                format!("{line}\n")
            }
            Client::BracketRoles => {
                let mut parts = vec!["[System instruction: Be brief.]".to_owned()];
                for (u, a) in h {
                    parts.push(format!("[User: {u}]"));
                    parts.push(format!("[Assistant: {a}]"));
                }
                parts.push(format!("[User: {cur}]"));
                parts.join("\n\n")
            }
            Client::MarkBlocks | Client::WordMarkBlocks => {
                let (user, assistant) = match self {
                    Client::MarkBlocks => ("> ", "< "),
                    _ => ("u ", "a "),
                };
                let mut blocks = vec![json!({"type": "text", "text": "You answer in one line."})];
                for (u, a) in h {
                    blocks.push(json!({"type": "text", "text": format!("{user}{u}")}));
                    blocks.push(json!({"type": "text", "text": format!("{assistant}{a}")}));
                }
                blocks.push(json!({"type": "text", "text": cur}));
                let line = json!({"type": "user", "message": {"role": "user", "content": blocks}});
                format!("{line}\n")
            }
            Client::WordMarkText => {
                let mut lines = vec!["You answer in one line.".to_owned()];
                for (u, a) in h {
                    lines.push(format!("u {u}"));
                    lines.push(format!("a {a}"));
                }
                lines.push(cur.to_owned());
                lines.join("\n")
            }
            Client::XmlTags => {
                let mut parts = Vec::new();
                for (u, a) in h {
                    parts.push(format!("<user>{u}</user>"));
                    parts.push(format!("<assistant>{a}</assistant>"));
                }
                parts.push(format!("<user>{cur}</user>"));
                parts.join("\n")
            }
        }
    }

    /// argv and stdin that send `prompt`, with the caller's `extra` flags
    /// right after `-p` (or first, for a client without one).
    pub fn invocation(self, extra: &[String], prompt: &str) -> (Vec<String>, Vec<u8>) {
        let (own, delivery) = self.shape();
        let mut argv = args(own);
        let at = argv
            .iter()
            .position(|a| a == "-p" || a == "--print")
            .map_or(0, |i| i + 1);
        argv.splice(at..at, extra.iter().cloned());
        match delivery {
            Delivery::Stdin => (argv, prompt.as_bytes().to_vec()),
            Delivery::Positional => {
                argv.push(prompt.to_owned());
                (argv, Vec::new())
            }
            Delivery::AfterDashes => {
                argv.extend(["--".to_owned(), prompt.to_owned()]);
                (argv, Vec::new())
            }
            Delivery::AfterPrint => {
                argv.insert(at, prompt.to_owned());
                (argv, Vec::new())
            }
        }
    }

    /// argv and stdin of the turn `current` after `history`.
    pub fn render(self, h: &[(String, String)], cur: &str) -> (Vec<String>, Vec<u8>) {
        self.invocation(&[], &self.prompt(h, cur))
    }

    /// The reply as the client reads it from stdout: text trimmed, or the
    /// final `result` of stream-json.
    pub fn reply(self, out: &[u8]) -> Option<String> {
        if self.streams() {
            String::from_utf8_lossy(out)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v["type"] == "result")
                .and_then(|v| v["result"].as_str().map(str::to_owned))
        } else if self == Client::BracketRoles {
            serde_json::from_slice::<Value>(out)
                .ok()
                .and_then(|v| v["result"].as_str().map(str::to_owned))
        } else {
            Some(text_reply(out))
        }
    }
}

/// The session id stream-json output reported first.
pub fn session_of(out: &[u8]) -> Option<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(str::to_owned))
}

/// One conversation as a client keeps it: its replies as it received them,
/// and how it calls `claude`.
#[derive(Clone, Debug)]
pub struct Chat {
    pub client: Client,
    /// (user, assistant) pairs as the client received them.
    pub history: Vec<(String, String)>,
    /// The caller's own flags (after `-p`).
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl Chat {
    pub fn new(client: Client) -> Chat {
        Chat {
            client,
            history: Vec::new(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// A second conversation continuing from `history`, calling the same way.
    pub fn branch(&self, history: Vec<(String, String)>) -> Chat {
        Chat {
            history,
            ..self.clone()
        }
    }

    /// The prompt of the turn `current`.
    pub fn render(&self, current: &str) -> String {
        self.client.prompt(&self.history, current)
    }

    /// argv and stdin of the turn `current`.
    pub fn invocation(&self, current: &str) -> (Vec<String>, Vec<u8>) {
        self.client.invocation(&self.args, &self.render(current))
    }

    /// Configure `cmd` to send `prompt` as this client does; returns its stdin.
    pub fn prepare_prompt(&self, cmd: &mut Command, prompt: &str) -> Input {
        let (args, stdin) = self.client.invocation(&self.args, prompt);
        cmd.args(&args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        if stdin.is_empty() {
            Input::Null
        } else {
            Input::Bytes(stdin)
        }
    }

    /// Configure `cmd` for the turn `current`; returns its stdin.
    pub fn prepare(&self, cmd: &mut Command, current: &str) -> Input {
        self.prepare_prompt(cmd, &self.render(current))
    }

    /// The reply as the client reads it from stdout.
    pub fn read(&self, stdout: &[u8]) -> Option<String> {
        self.client.reply(stdout)
    }

    /// Keep a turn's reply in the history.
    pub fn keep(&mut self, current: &str, ran: &Ran) {
        let reply = self.read(&ran.stdout).expect("a reply");
        self.history.push((current.to_string(), reply));
    }
}
