//! A streaming caller that kills the CLI once it has the whole reply, as an
//! OpenAI-compatible server in streaming mode does: it runs
//! `claude -p --output-format stream-json --verbose --include-partial-messages`,
//! takes the reply from the text deltas and SIGKILLs its `claude` at the
//! `message_delta` that ends the turn (or at the `result` line). The turn is
//! on record before those bytes reach it: the next turn resumes, and the
//! killed turn is in the shim's runs log. Real CLI, loopback server.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::Value;

use crate::support::world::World;

#[derive(Clone, Copy, Debug, PartialEq)]
enum KillAt {
    /// The main thread's `message_delta` whose stop reason ends the turn.
    FinalDelta,
    /// The `result` line.
    Result,
}

/// Send `msg` as a streaming caller and SIGKILL the shim at `at`; the reply
/// it took from the deltas is kept in the history.
fn streamed_and_killed(w: &mut World, msg: &str, at: KillAt) {
    let mut cmd = w.sb.shimmed([
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn the shim");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(w.prompt(msg).as_bytes())
        .unwrap();
    let mut reply = String::new();
    let mut killed = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let top = v["parent_tool_use_id"].is_null();
        let event = &v["event"];
        if v["type"] == "stream_event" && top {
            if event["type"] == "content_block_delta" && event["delta"]["type"] == "text_delta" {
                reply.push_str(event["delta"]["text"].as_str().unwrap_or(""));
            }
            let ends = event["type"] == "message_delta"
                && !matches!(
                    event["delta"]["stop_reason"].as_str(),
                    None | Some("tool_use")
                );
            if ends && at == KillAt::FinalDelta {
                child.kill().unwrap();
                killed = true;
                break;
            }
        }
        if v["type"] == "result" && at == KillAt::Result {
            child.kill().unwrap();
            killed = true;
            break;
        }
    }
    child.wait().unwrap();
    assert!(killed, "{msg}: the turn ended before {at:?}\n{}", w.log());
    assert!(!reply.is_empty(), "{msg}: no reply streamed\n{}", w.log());
    w.history.push((msg.to_owned(), reply));
}

/// Two plain turns, a third streamed and killed at `at`, a fourth plain one:
/// the fourth resumes the session that holds the third, and all four are in
/// the runs log.
fn killed_at_the_end_of_the_reply(warm: bool, at: KillAt) {
    let mut w = World::warm(warm);
    w.turn("q1: name a colour");
    w.turn("q2: name a fruit");
    streamed_and_killed(&mut w, "q3: name a tree", at);
    w.turn("q4: name a river");
    let runs = w.runs();
    let kinds = w.kinds();
    assert_eq!(
        runs.len(),
        4,
        "every turn is in the runs log, the killed one too: {kinds:?}\n{}",
        w.log()
    );
    assert_eq!(
        kinds[3],
        "resumed",
        "the turn after the killed one resumes: {kinds:?}\n{}\n{}",
        w.log(),
        w.sb.session_files()
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n=====\n")
    );
    // The resumed session holds the killed turn: each message reaches the
    // model once, none in a replayed transcript.
    let last = w.server.main_requests().pop().unwrap();
    let texts = last.user_texts().join("\n");
    for q in ["q1: name", "q2: name", "q3: name", "q4: name"] {
        assert_eq!(texts.matches(q).count(), 1, "{q} in: {texts}");
    }
    assert!(
        !texts.contains("Assistant:"),
        "a replayed transcript: {texts}"
    );
    if warm {
        w.stop_keeper();
    }
}

#[test]
fn killed_at_the_final_delta_cold_the_next_turn_resumes() {
    killed_at_the_end_of_the_reply(false, KillAt::FinalDelta);
}

#[test]
fn killed_at_the_final_delta_warm_the_next_turn_resumes() {
    killed_at_the_end_of_the_reply(true, KillAt::FinalDelta);
}

#[test]
fn killed_at_the_result_cold_the_turn_is_logged() {
    killed_at_the_end_of_the_reply(false, KillAt::Result);
}

#[test]
fn killed_at_the_result_warm_the_turn_is_logged() {
    killed_at_the_end_of_the_reply(true, KillAt::Result);
}
