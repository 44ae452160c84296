//! A killed turn, retried, continues — against the REAL CLI and the loopback API
//! server. A job runner kills `claude -p` mid-turn (after a tool ran, while the model
//! is answering its result) and retries it with the same input. With
//! `CLAUDE_SHIM_ON_RETRY=continue` the retry resumes the killed run's session with
//! `CLAUDE_CODE_RESUME_INTERRUPTED_TURN=1` and no prompt: the model sees the message
//! once, the tool call and its result (the partial work), then the CLI's
//! "Continue from where you left off." Without the variable the retry is today's:
//! forked at the last finished turn, the partial work gone.

use crate::support::api::TOOL_USE;
use crate::support::{LoggedRequest, World};
use nix::sys::signal::Signal;
use serde_json::Value;

const NOTES: &str = "NOTES-FROM-THE-FILE-7c1f";
const ASK: &str = "please read notes.txt and summarise it";
const CONTINUE: &str = "Continue from where you left off.";

/// Whether a request answers the Read tool's call (its result is in it).
fn has_tool_result(req: &LoggedRequest) -> bool {
    req.messages().iter().any(|m| {
        m["content"].as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b["type"] == "tool_result" && b.to_string().contains(NOTES))
        })
    })
}

fn has_tool_use(req: &LoggedRequest) -> bool {
    req.messages().iter().any(|m| {
        m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_use"))
    })
}

/// How many times `text` is in the request's user messages (system reminders aside).
fn copies(req: &LoggedRequest, text: &str) -> usize {
    req.user_texts().iter().filter(|t| t.contains(text)).count()
}

/// A world whose model calls Read on the ask's first request: a request holding
/// the tool's result is the model at work; anything else gets text.
fn world() -> World {
    let w = World::new();
    std::fs::write(w.sb.work.join("notes.txt"), format!("{NOTES}\n")).unwrap();
    let notes = w.sb.work.join("notes.txt");
    w.server.set_reply(move |req: &LoggedRequest| {
        let asks = req.last_user_text().is_some_and(|t| t.contains(ASK));
        if has_tool_result(req) {
            format!("the notes say {NOTES}")
        } else if asks && !has_tool_use(req) {
            let call = serde_json::json!({"name": "Read",
                "input": {"file_path": notes.to_string_lossy()}});
            format!("{TOOL_USE}{call}")
        } else {
            format!("answer {}", req.index)
        }
    });
    w
}

/// Run the ask and kill it (SIGTERM, as `timeout` does) once the model is
/// answering the tool's result: the tool ran, the turn has no result.
fn killed_turn(w: &World) {
    w.killed(ASK, Signal::SIGTERM, has_tool_result);
    w.server.clear_delay();
    w.server.clear_log();
}

/// The session each main request of the log belongs to.
fn sessions(w: &World) -> Vec<String> {
    w.server
        .main_requests()
        .iter()
        .filter_map(LoggedRequest::session_id)
        .collect()
}

fn continued(warm: &str) {
    let mut w = world();
    w.sb.set_env("CLAUDE_SHIM_WARM", warm);
    w.turn("first message");
    killed_turn(&w);

    let out = w.turn_env(ASK, &[("CLAUDE_SHIM_ON_RETRY", "continue")]);
    let reqs = w.server.main_requests();
    assert_eq!(reqs.len(), 1, "one request finished the turn: {reqs:#?}");
    let req = &reqs[0];
    assert_eq!(
        copies(req, ASK),
        1,
        "the message once: {:?}",
        req.user_texts()
    );
    assert!(has_tool_use(req), "the tool call is in the history");
    assert!(has_tool_result(req), "the tool's result is in the history");
    assert_eq!(copies(req, CONTINUE), 1, "{:?}", req.user_texts());
    assert!(
        !req.user_texts().iter().any(|t| t.contains("Assistant:")),
        "the transcript was not replayed: {:?}",
        req.user_texts()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("the notes say {NOTES}"),
        "the caller got the turn's answer as text"
    );
    assert_eq!(w.last_run(), ("resumed".into(), "continued".into()));

    // The next turn resumes the continued session.
    let continued_session = sessions(&w);
    w.server.clear_log();
    w.turn("thanks");
    assert_eq!(sessions(&w), continued_session, "{}", w.log());
    let last = w.server.last_main().unwrap();
    assert_eq!(copies(&last, ASK), 1, "{:?}", last.user_texts());
    assert!(
        has_tool_result(&last),
        "the continued turn stays in its session"
    );
}

#[test]
fn a_killed_turn_retried_with_on_retry_continue_finishes_in_its_session_cold() {
    continued("0");
}

#[test]
fn a_killed_warm_turn_retried_with_on_retry_continue_finishes_in_its_session() {
    continued("1");
}

#[test]
fn without_on_retry_a_retry_of_a_killed_turn_starts_over_as_today() {
    let mut w = world();
    w.sb.set_env("CLAUDE_SHIM_WARM", "0");
    w.turn("first message");
    killed_turn(&w);

    w.turn(ASK);
    let reqs = w.server.main_requests();
    assert_eq!(reqs.len(), 2, "the tool is called again: {reqs:#?}");
    let first = &reqs[0];
    assert_eq!(copies(first, ASK), 1, "{:?}", first.user_texts());
    assert!(!has_tool_use(first), "the killed run's work is not there");
    assert_eq!(copies(first, CONTINUE), 0);
    assert!(has_tool_result(&reqs[1]), "the tool ran again");
    let (kind, why) = w.last_run();
    assert_ne!(why, "continued");
    assert_eq!(kind, "forked", "forked at the last finished turn");
}

#[test]
fn the_variable_must_say_continue() {
    // Any other value is today's behaviour too (the retry starts over).
    let mut w = world();
    w.sb.set_env("CLAUDE_SHIM_WARM", "0");
    w.turn("first message");
    killed_turn(&w);
    w.turn_env(ASK, &[("CLAUDE_SHIM_ON_RETRY", "yes")]);
    assert_ne!(w.last_run().1, "continued");
    let first: Value = w.server.main_requests()[0].body.clone();
    assert!(!first.to_string().contains(CONTINUE));
}
