//! Why a turn missed the prompt cache, against the REAL CLI and the loopback
//! server, whose cache model (`support::api::CacheModel`) keys on the request's
//! bytes and its model, and lets entries expire 5 minutes after their last read or
//! write. Each test makes one reason happen: the server's own figures prove the
//! turn missed (or read) its cache, and `log --json`'s `cache_miss`, the reason line
//! of `log`, and `claude_shim_cache_misses_total` must name it. What does not move
//! the prefix on this release (a CLAUDE.md edit, a commit, `--append-system-prompt`
//! on a resume, `--allowedTools`) is in docs/metrics.md's table.

use std::time::Duration;

use crate::support::clients::text_reply;
use crate::support::{describe, run, LoggedRequest, World};
use serde_json::Value;

/// A cold conversation (no live CLIs: each turn a new process, as most callers
/// run), two turns in; the second read its cache.
fn two_turns() -> World {
    let mut w = World::warm(false);
    w.turn("first message");
    w.turn("second message");
    let second = w.server.last_main().expect("a request");
    assert!(
        second.cache_read > second.cache_write,
        "the second turn read its cache: {second:?}"
    );
    w
}

/// The newest turn as `log --json` has it.
fn newest(w: &World) -> Value {
    let out = run(w.sb.cli(&["log", "--json", "--limit", "1"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("log --json");
    v["turns"][0].clone()
}

fn log_text(w: &World) -> String {
    let out = run(w.sb.cli(&["log", "--limit", "1"]), b"");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `claude_shim_cache_misses_total{reason="…"}` as `claude-shim metrics` prints it.
fn misses(w: &World, reason: &str) -> f64 {
    let out = run(w.sb.cli(&["metrics"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let series = format!("claude_shim_cache_misses_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

/// The newest turn missed its cache (the server says so) for `reason`, and
/// every face of the shim says why.
fn assert_missed(w: &World, reason: &str, sentence: &str) {
    let req: LoggedRequest = w.server.last_main().expect("a request");
    assert!(
        req.cache_write > req.cache_read,
        "the turn missed its cache on the server: {req:?}"
    );
    let turn = newest(w);
    assert_eq!(turn["kind"], "resumed", "{turn}\n{}", w.context());
    assert_eq!(turn["cache_miss"], reason, "{turn}\n{}", w.context());
    let text = log_text(w);
    assert!(
        text.contains("missed the prompt cache") && text.contains(sentence),
        "{text}"
    );
    assert_eq!(misses(w, reason), 1.0);
    w.assert_no_shim_errors();
}

#[test]
fn a_resumed_turn_that_read_its_cache_says_so() {
    let w = two_turns();
    let turn = newest(&w);
    assert_eq!(turn["kind"], "resumed", "{turn}");
    assert!(turn["cache_miss"].is_null(), "{turn}");
    assert!(
        log_text(&w).contains("read its prompt cache"),
        "{}",
        log_text(&w)
    );
    assert_eq!(misses(&w, "unknown"), 0.0);
}

/// Idle past the cache's lifetime: the server's clock and the shim's record of the
/// previous turn both move 6 minutes back, instead of the test waiting.
#[test]
fn idle_past_the_lifetime() {
    let mut w = two_turns();
    w.server.advance_cache_clock(Duration::from_secs(360));
    w.sb.store()
        .sqlite()
        .expect("a SQLite store")
        .execute("UPDATE runs SET at = at - 360", [])
        .expect("age the runs");
    w.turn("third message");
    assert_missed(&w, "idle", "sat idle longer than the cache lives");
}

/// The model is overloaded, and the CLI answers with the `--fallback-model` the
/// caller gave every turn (a turn with another `--model` or `ANTHROPIC_MODEL` is
/// another conversation to the shim, which runs it fresh; a resumed session keeps
/// the model its settings named at its start). The model is part of the cache's
/// key; the shim reads it from the CLI's record of its request.
#[test]
fn another_model() {
    let mut w = World::warm(false);
    let args = ["-p", "--fallback-model", "claude-sonnet-4-5"];
    for msg in ["first message", "second message"] {
        let out = w.send(w.sb.shimmed(args), msg, |o| text_reply(&o.stdout));
        assert!(out.status.success(), "{}", describe(&out));
    }
    let overloaded = "claude-opus-5-5";
    w.server.set_error(move |req: &LoggedRequest| {
        (req.is_main() && req.model() == Some(overloaded)).then(|| (529, "Overloaded".to_owned()))
    });
    let out = w.send(w.sb.shimmed(args), "third message", |o| {
        text_reply(&o.stdout)
    });
    assert!(out.status.success(), "{}\n{}", describe(&out), w.context());
    assert_eq!(
        w.server.last_main().unwrap().model(),
        Some("claude-sonnet-4-5")
    );
    assert_missed(&w, "model", "the model changed");
}

/// A tool denied in the settings between turns: the tools array, the start of
/// the prefix, changes.
#[test]
fn another_tool_set() {
    let mut w = two_turns();
    settings(&w, r#"{"permissions": {"deny": ["Edit"]}}"#);
    w.turn("third message");
    assert_missed(&w, "tools", "tools or MCP servers changed");
}

fn settings(w: &World, json: &str) {
    std::fs::write(w.sb.claude_dir().join("settings.json"), json).expect("settings.json");
}

/// The CLI compacts the session (forced cheaply, as tests/e2e/compaction.rs
/// does): its history becomes a summary the cache never saw.
#[test]
fn a_compaction() {
    let server = crate::compaction::server();
    let mut w = World::with_server(server);
    w.sb.set_env("CLAUDE_SHIM_WARM", "0");
    w.turn("first message");
    w.turn("second message");
    w.turn_env("third message", &[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "1")]);
    assert_missed(&w, "compaction", "compacted the session");
}

/// A turn that read its whole cached prefix and wrote a long new message (about
/// 400 KB) missed nothing: writing the new message is what any turn does. The
/// server's cache model says it read all the previous turn left and wrote more
/// than it read; the shim must not count it as a miss.
#[test]
fn a_long_new_message_after_a_cache_read_is_no_miss() {
    let mut w = two_turns();
    let second = w.server.last_main().expect("a request");
    let left = second.cache_read + second.cache_write;
    let long = format!("third message: {}", "the quick brown fox. ".repeat(20_000));
    assert!(long.len() > 400_000);
    w.turn(&long);
    let third = w.server.last_main().expect("a request");
    assert!(
        third.cache_read >= left && third.cache_write > third.cache_read,
        "read all it left ({left}), wrote more than it read: {third:?}"
    );
    let turn = newest(&w);
    assert_eq!(turn["kind"], "resumed", "{turn}\n{}", w.context());
    assert!(turn["cache_miss"].is_null(), "{turn}");
    let text = log_text(&w);
    assert!(
        text.contains("read its prompt cache") && !text.contains("missed"),
        "{text}"
    );
    for reason in [
        "idle",
        "model",
        "system_prompt",
        "tools",
        "compaction",
        "snapshot",
        "unknown",
    ] {
        assert_eq!(misses(&w, reason), 0.0, "{reason}");
    }
    w.assert_no_shim_errors();
}

/// A new message whose text is `compact_boundary`, after the cache expired: the
/// turn missed its cache for idleness. Nothing was compacted (a compaction is a
/// record of the session's structure, never text a caller sends).
#[test]
fn a_message_naming_a_compaction_is_not_one() {
    let mut w = two_turns();
    w.server.advance_cache_clock(Duration::from_secs(360));
    w.sb.store()
        .sqlite()
        .expect("a SQLite store")
        .execute("UPDATE runs SET at = at - 360", [])
        .expect("age the runs");
    w.turn("compact_boundary");
    assert_eq!(
        w.server
            .last_main()
            .and_then(|r| r.last_user_text())
            .as_deref(),
        Some("compact_boundary"),
        "the message went as sent"
    );
    assert_missed(&w, "idle", "sat idle longer than the cache lives");
    assert_eq!(misses(&w, "compaction"), 0.0);
}
