//! Warm turns: a conversation's next turn runs in the live Claude Code
//! process of its last turn. A managed turn that may run warm runs in a live
//! process owned by the keeper (`keeper`): the one the conversation's last
//! turn ran in, when nothing a cold start would read has changed since
//! (`fingerprint`), else a new one, which then stays alive for the next turn.
//! The shim writes the user message to it, and prints what a cold run would
//! have printed (`render`). Anything amiss: the cold path of old.

pub mod client;
pub mod fingerprint;
pub mod keeper;
pub mod protocol;
pub mod socket;
pub mod unresponsive;

use crate::argv::{self, ParsedArgs};
use crate::invocation::{InputFormat, Managed, Mode, OutputFormat};
use sha2::{Digest, Sha256};
use std::ffi::OsString;

/// Why a call runs cold where it might have run in a live CLI: a stable
/// code (the `reason` of `claude_shim_cold_turns_total`) and a sentence (the
/// end of the turn's reason in `log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub code: &'static str,
    pub text: &'static str,
}

const fn refused(code: &'static str, text: &'static str) -> Refusal {
    Refusal { code, text }
}

/// A call whose input is text (the prompt as an argument or on stdin) is
/// the CLI's *single-shot print session*; a live CLI reads stream-json and
/// is a multi-turn one, which the CLI asks the model for differently (the
/// Bash tool's background limit, `thinking.display`) and which outlives the
/// turn (background work calls the model after the reply). See
/// docs/cli-versions.md.
pub const SINGLE_SHOT: Refusal = refused(
    "single-shot",
    "a call with text input is a single-shot print session, which a live CLI is not (the model would get another request): it ran cold",
);

/// Why an invocation cannot run warm (`None`: it can). `text_warm`: the
/// caller allowed text input in live CLIs ([`crate::env::warm_text`]). Pure.
pub fn refusal(m: &Managed, text_warm: bool) -> Option<Refusal> {
    // An Agent SDK caller (no `-p`) speaks stream-json both ways: its
    // output must be stream-json too.
    let stream_in = m.mode == Mode::Sdk || m.input == InputFormat::StreamJson;
    if !stream_in && !text_warm {
        return Some(SINGLE_SHOT);
    }
    if stream_in && m.output != OutputFormat::StreamJson {
        return Some(refused(
            "stream-json-input",
            "stream-json input with another output format runs cold",
        ));
    }
    if m.caller_resume.is_some() {
        return Some(refused(
            "caller-session",
            "a caller-chosen session runs cold",
        ));
    }
    if m.mode == Mode::Printed {
        return Some(refused(
            "without-p",
            "a call without -p (it prints: stdout is not a terminal) runs cold",
        ));
    }
    if m.output == OutputFormat::Json && m.args.has("verbose") {
        return Some(refused(
            "json-verbose",
            "--output-format json --verbose prints every message as an array: it runs cold",
        ));
    }
    if m.output == OutputFormat::StreamJson && !m.args.has("verbose") {
        // The CLI refuses it; a live process would not (it gets --verbose).
        return Some(refused(
            "stream-json-without-verbose",
            "--output-format stream-json without --verbose is the CLI's error: it runs cold",
        ));
    }
    PER_PROCESS
        .iter()
        .find(|(flag, _)| m.args.has(flag))
        .map(|(_, why)| refused("per-process-flag", why))
}

/// Flags whose effect a live process would carry from one turn to the next,
/// where each cold run starts afresh.
const PER_PROCESS: &[(&str, &str)] = &[
    (
        "max-budget-usd",
        "--max-budget-usd counts per process (a live one would carry the spend over): it runs cold",
    ),
    (
        "replay-user-messages",
        "--replay-user-messages would echo the live process's input: it runs cold",
    ),
    (
        "debug",
        "--debug prints the start-up's debug lines, which a live process printed once: it runs cold",
    ),
    (
        "debug-file",
        "--debug-file is written per process: it runs cold",
    ),
    (
        "debug-to-stderr",
        "--debug-to-stderr prints the start-up's debug lines, which a live process printed once: it runs cold",
    ),
    (
        "mcp-debug",
        "--mcp-debug prints the MCP servers' start-up, which a live process did once: it runs cold",
    ),
];

/// Flags a live process gets from us, not from the caller.
const OURS: &[&str] = &[
    "input-format",
    "output-format",
    "verbose",
    "resume",
    "session-id",
    "fork-session",
    "resume-session-at",
];

/// The caller's flags without the prompt and without what the live process
/// gets from us (formats, `--verbose`, session flags). `None`: not UTF-8.
pub fn caller_flags(args: &[OsString], parsed: &ParsedArgs) -> Option<Vec<String>> {
    let mut gone: Vec<std::ops::Range<usize>> = parsed
        .flags
        .iter()
        .filter(|u| OURS.contains(&u.name))
        .map(|u| u.start..u.end)
        .collect();
    gone.extend(parsed.positionals.iter().map(|p| p.index..p.index + 1));
    if let Some(dd) = parsed.dashdash {
        gone.push(dd..dd + 1);
    }
    args.iter()
        .enumerate()
        .filter(|(i, _)| !gone.iter().any(|r| r.contains(i)))
        .map(|(_, a)| a.to_str().map(str::to_owned))
        .collect()
}

/// A live process's argv: the plan's session flags, the caller's flags,
/// stream-json in and out.
pub fn live_args(session_flags: &[OsString], flags: &[String]) -> Option<Vec<String>> {
    let mut out: Vec<String> = session_flags
        .iter()
        .map(|a| a.to_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    out.extend(flags.iter().cloned());
    out.extend(
        [
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(String::from),
    );
    Some(out)
}

/// Why an Agent SDK caller's turn cannot run in a live process, from its
/// argv and its `initialize` request (`None`: it can). Pure.
///
/// - SDK MCP servers live in the caller's process: a cold start connects
///   to the new caller's servers (their `initialize`, `tools/list`), a live
///   process connected to an earlier caller's.
/// - `SessionStart` and `SessionEnd` hooks fire when a process starts and
///   ends: a live process's turn does neither.
pub fn sdk_refusal(args: &[String], request: Option<&serde_json::Value>) -> Option<Refusal> {
    let sdk_server = |config: &str| {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(config) else {
            return false;
        };
        v.get("mcpServers")
            .and_then(|s| s.as_object())
            .is_some_and(|s| s.values().any(|c| c["type"] == "sdk"))
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--mcp-config") {
            Some("") => it.next().map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        };
        if value.is_some_and(sdk_server) {
            return Some(SDK_SERVERS);
        }
    }
    let r = request?;
    if r["sdkMcpServers"].as_array().is_some_and(|s| !s.is_empty()) {
        return Some(SDK_SERVERS);
    }
    let hooks = r["hooks"].as_object();
    if ["SessionStart", "SessionEnd"]
        .iter()
        .any(|e| hooks.is_some_and(|h| h.contains_key(*e)))
    {
        return Some(refused(
            "session-hooks",
            "SessionStart and SessionEnd hooks fire per process: it runs cold",
        ));
    }
    None
}

const SDK_SERVERS: Refusal = refused(
    "sdk-mcp-servers",
    "SDK MCP servers live in the caller's process: it runs cold",
);

/// What a live process took in at start (beyond its session), hashed: a
/// turn may use it only if its own is the same.
pub struct KeyParts<'a> {
    /// The Agent SDK's `initialize` request it got (without its id), or "":
    /// a process is initialized once.
    pub handshake: &'a str,
    pub flags: &'a [String],
    pub env: &'a str,
    pub cwd: &'a str,
    /// The real binary (path, size, mtime): an upgrade starts afresh.
    pub binary: &'a str,
    pub files: &'a str,
}

pub fn key(k: &KeyParts<'_>) -> String {
    let mut h = Sha256::new();
    for part in [k.env, k.cwd, k.binary, k.files, k.handshake] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for f in k.flags {
        h.update((f.len() as u64).to_le_bytes());
        h.update(f.as_bytes());
    }
    hex::encode(&h.finalize()[..16])
}

/// The user line a live process gets for a turn's prompt text.
pub fn user_line(text: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": text},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

/// The control request that stops a live process's turn, as SIGINT stops a
/// cold run's (its result: `error_during_execution`, the process lives on).
pub fn interrupt_line(request_id: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "interrupt"},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

/// argv parsed, for [`caller_flags`].
pub fn parse(args: &[OsString]) -> Option<ParsedArgs> {
    argv::parse(args).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn managed(list: &[&str]) -> Managed {
        match crate::invocation::classify(&os(list), Default::default()) {
            crate::invocation::Class::Managed(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn which_calls_may_run_warm() {
        // Text input: a single-shot print session, which no live CLI is.
        for text in [
            &["-p"][..],
            &["-p", "--output-format", "json"],
            &["-p", "--output-format", "stream-json", "--verbose"],
        ] {
            assert_eq!(
                super::refusal(&managed(text), false),
                Some(SINGLE_SHOT),
                "{text:?}"
            );
        }
        // The rest as when the caller allows text input in live CLIs.
        let refusal = |m: &Managed| super::refusal(m, true);
        assert_eq!(refusal(&managed(&["-p"])), None);
        assert_eq!(refusal(&managed(&["-p", "--output-format", "json"])), None);
        assert_eq!(
            refusal(&managed(&[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose"
            ])),
            None
        );
        assert!(refusal(&managed(&["-p", "--output-format", "json", "--verbose"])).is_some());
        // The CLI's own error: a live process would get --verbose from us.
        assert!(refusal(&managed(&["-p", "--output-format", "stream-json"])).is_some());
        for per_process in [
            &["-p", "--max-budget-usd", "1"][..],
            &["-p", "--debug"],
            &["-p", "-d"],
            &["-p", "--debug-file", "/tmp/x"],
            &["-p", "--mcp-debug"],
        ] {
            assert!(refusal(&managed(per_process)).is_some(), "{per_process:?}");
        }
        // Agent SDK callers: stream-json both ways, with --verbose.
        let sdk = [
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        assert_eq!(refusal(&managed(&sdk)), None);
        assert_eq!(super::refusal(&managed(&sdk), false), None);
        assert!(refusal(&managed(&sdk[..4])).is_some());
        assert!(refusal(&managed(&["-p", "--input-format", "stream-json"])).is_some());
    }

    #[test]
    fn sdk_callers_with_in_process_servers_or_process_hooks_run_cold() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let sdk_server = r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}"#;
        let stdio_server = r#"{"mcpServers":{"fs":{"type":"stdio","command":"x"}}}"#;
        assert!(sdk_refusal(&s(&["--mcp-config", sdk_server]), None).is_some());
        assert!(sdk_refusal(&s(&[&format!("--mcp-config={sdk_server}")]), None).is_some());
        assert_eq!(sdk_refusal(&s(&["--mcp-config", stdio_server]), None), None);
        let req = |v: serde_json::Value| sdk_refusal(&[], Some(&v));
        assert!(req(serde_json::json!({"sdkMcpServers": ["calc"]})).is_some());
        assert_eq!(req(serde_json::json!({"sdkMcpServers": []})), None);
        let hooks = |event: &str| serde_json::json!({"hooks": {event: [{"matcher": null}]}});
        assert!(req(hooks("SessionStart")).is_some());
        assert!(req(hooks("SessionEnd")).is_some());
        assert_eq!(req(hooks("PreToolUse")), None);
        assert_eq!(req(serde_json::json!({"hooks": null})), None);
    }

    #[test]
    fn a_live_process_gets_the_callers_flags_and_ours() {
        let args = os(&[
            "-p",
            "--model",
            "opus",
            "--output-format",
            "json",
            "--max-turns",
            "3",
            "--",
            "the prompt",
        ]);
        let parsed = argv::parse(&args).unwrap();
        let flags = caller_flags(&args, &parsed).unwrap();
        assert_eq!(flags, ["-p", "--model", "opus", "--max-turns", "3"]);
        let live = live_args(&os(&["--resume", "S"]), &flags).unwrap();
        assert_eq!(
            live.join(" "),
            "--resume S -p --model opus --max-turns 3 --input-format stream-json --output-format stream-json --verbose"
        );
        let reparsed =
            argv::parse(&os(&live.iter().map(String::as_str).collect::<Vec<_>>())).unwrap();
        assert!(reparsed.positionals.is_empty());
        // The key follows the flags, the environment and the files.
        let k = |flags: &[String], env: &str| {
            key(&KeyParts {
                handshake: "",
                flags,
                env,
                cwd: "/w",
                binary: "b",
                files: "f",
            })
        };
        assert_eq!(k(&flags, "e"), k(&flags, "e"));
        assert_ne!(k(&flags, "e"), k(&flags, "e2"));
        assert_ne!(k(&flags, "e"), k(&flags[..3], "e"));
        let line = user_line("a \"quoted\"\nmessage");
        assert!(line.ends_with(b"\n"));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["message"]["content"], "a \"quoted\"\nmessage");
    }
}
