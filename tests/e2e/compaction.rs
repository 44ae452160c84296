//! Honest after compaction, against the REAL CLI and the loopback API server: a session
//! the CLI compacted (its history replaced by a summary) is counted; past
//! `CLAUDE_SHIM_MAX_COMPACTIONS` the turn runs fresh with the caller's full transcript;
//! should the CLI refuse that as too long before any output, the compacted session is
//! resumed instead (never worse). Compaction is forced cheaply with the CLI's own
//! `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=1` (checked on 2.1.330: it compacts before sending
//! once there are two earlier turns).

use crate::support::{describe, ApiServer, LoggedRequest, World};
use serde_json::Value;

const SUMMARY: &str = "SUMMARY-OF-THE-CONVERSATION";

/// Replies name the turn; a compaction request gets a summary (also
/// `cache_miss`'s compacting server).
pub(crate) fn server() -> ApiServer {
    let server = ApiServer::start();
    server.set_reply(|req: &LoggedRequest| {
        let asks_summary = req.user_texts().iter().any(|t| {
            t.trim_start()
                .starts_with("CRITICAL: Respond with TEXT ONLY")
        });
        if asks_summary {
            format!("<analysis>read it</analysis>\n\n<summary>{SUMMARY}</summary>")
        } else {
            format!("answer {}", req.index)
        }
    });
    server
}

/// The number of compactions in the session files.
fn compactions(w: &World) -> usize {
    w.sb.session_files()
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|r| r["type"] == "system" && r["subtype"] == "compact_boundary")
                .count()
        })
        .sum()
}

/// Three turns, the third compacted by the CLI.
fn compacted(w: &mut World) {
    w.turn("first message");
    w.turn("second message");
    w.turn_env("third message", &[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "1")]);
    assert_eq!(compactions(w), 1, "the CLI compacted the session");
    let last = w.server.last_main().unwrap();
    assert!(
        last.user_texts().iter().any(|t| t.contains(SUMMARY)),
        "the third turn's request carries the summary: {:?}",
        last.user_texts()
    );
}

/// Whether the request replays the whole transcript as one prompt.
fn replays_the_transcript(req: &LoggedRequest) -> bool {
    req.user_texts()
        .iter()
        .any(|t| t.contains("Human: first message") && t.contains("Assistant: "))
}

#[test]
fn below_the_ceiling_a_compacted_session_is_resumed() {
    let mut w = World::with_server(server());
    compacted(&mut w);
    w.turn("fourth message");
    assert_eq!(w.last_run().0, "resumed");
    let req = w.server.last_main().unwrap();
    assert!(!replays_the_transcript(&req), "{:?}", req.user_texts());
    assert!(req.user_texts().iter().any(|t| t.contains(SUMMARY)));
}

#[test]
fn past_the_ceiling_the_turn_runs_fresh_with_the_full_transcript() {
    let mut w = World::with_server(server());
    compacted(&mut w);
    w.turn_env("fourth message", &[("CLAUDE_SHIM_MAX_COMPACTIONS", "1")]);
    assert_eq!(w.last_run(), ("fresh".to_string(), "compacted".to_string()));
    let req = w.server.last_main().unwrap();
    assert!(replays_the_transcript(&req), "{:?}", req.user_texts());
    assert!(
        !req.user_texts().iter().any(|t| t.contains(SUMMARY)),
        "no summary: the full history"
    );
    let fresh_prompt = req.user_texts().last().cloned().unwrap();
    // The next turn resumes that fresh session: its one prompt, then the new
    // message — no summary, no second copy.
    w.turn_env("fifth message", &[("CLAUDE_SHIM_MAX_COMPACTIONS", "1")]);
    assert_eq!(w.last_run().0, "resumed");
    let req = w.server.last_main().unwrap();
    assert_eq!(
        req.user_texts(),
        [fresh_prompt, "fifth message".to_string()]
    );
}

#[test]
fn a_full_transcript_refused_as_too_long_resumes_the_compacted_session() {
    let mut w = World::with_server(server());
    compacted(&mut w);
    // The API refuses the replayed transcript as longer than the context.
    w.server.set_error(|req| {
        replays_the_transcript(req).then(|| {
            (
                400,
                "prompt is too long: 250000 tokens > 200000 maximum".to_string(),
            )
        })
    });
    let before = w.server.main_requests().len();
    let out = w.turn_env("fourth message", &[("CLAUDE_SHIM_MAX_COMPACTIONS", "1")]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("too long"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        w.last_run(),
        ("resumed".to_string(), "compacted-too-long".to_string())
    );
    let after = w.server.main_requests();
    assert_eq!(
        after.len(),
        before + 2,
        "the refused attempt, then the resume"
    );
    assert!(replays_the_transcript(&after[before]));
    let resumed = &after[before + 1];
    assert!(
        resumed.user_texts().iter().any(|t| t.contains(SUMMARY)),
        "{:?}",
        resumed.user_texts()
    );
    assert_eq!(
        resumed.user_texts().last().map(String::as_str),
        Some("fourth message")
    );
}
