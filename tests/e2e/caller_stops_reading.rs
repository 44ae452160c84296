//! A caller that stops reading early (`claude -p … | head -c 20`) while the
//! real CLI prints a long reply (issue 38). It sees what it would without the
//! shim — the same bytes, exit status and stderr — and the turn is pinned
//! with the whole reply, which the session file holds: a next turn that
//! replays it resumes. The shim used to pin the part of the reply it had
//! passed on before the pipe closed, so that next turn ran fresh
//! (`reply-differs`).

use crate::support::api::pad_reply;
use crate::support::clients::labels;
use crate::support::process::{reader, wait_timeout};
use crate::support::{describe, run, World};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Longer than a pipe holds, so the CLI is still writing when the caller goes.
const REPLY: usize = 200_000;
/// What the caller reads before it closes its end.
const READ: usize = 20;

/// The reply to a message: long, and the same whoever asks (the direct
/// call and the shim's get the same).
fn long_reply(last_user_text: &str) -> String {
    let first: String = last_user_text.chars().take(40).collect();
    pad_reply(format!("answer to {first}:"), REPLY)
}

/// What a caller that reads `READ` bytes of stdout and closes it sees:
/// those bytes, how the command ended, and its stderr.
fn read_and_close(mut cmd: Command, stdin: &[u8]) -> (Vec<u8>, (Option<i32>, Option<i32>), String) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin)
        .expect("write the prompt");
    let err = reader(child.stderr.take());
    let mut out = child.stdout.take().unwrap();
    let mut head = vec![0u8; READ];
    out.read_exact(&mut head).expect("the reply's first bytes");
    drop(out);
    let status = wait_timeout(&mut child, Duration::from_secs(120)).expect("it ends");
    let err = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    (head, (status.code(), status.signal()), err)
}

/// The caller's view with the digits of its head as `0`: JSON output
/// begins with `{"duration_api_ms":N`, a timing no two runs share.
fn without_digits(
    (mut head, status, err): (Vec<u8>, (Option<i32>, Option<i32>), String),
) -> (Vec<u8>, (Option<i32>, Option<i32>), String) {
    for b in head.iter_mut().filter(|b| b.is_ascii_digit()) {
        *b = b'0';
    }
    (head, status, err)
}

/// The shim's log and runs (the replies are too long to show).
fn brief(w: &World) -> String {
    format!("{}\nruns: {:?}", w.sb.unsandbox(&w.log()), w.kinds())
}

fn stops_reading_then_continues(w: &mut World, args: &[&str]) {
    w.server
        .set_reply(|req| long_reply(&req.last_user_text().unwrap_or_default()));
    let first = "Question one.";
    let prompt = labels(&[], first, "Human", "\n\n");
    let direct = without_digits(read_and_close(w.sb.direct(args), prompt.as_bytes()));
    let shimmed = without_digits(read_and_close(w.sb.shimmed(args), prompt.as_bytes()));
    assert_eq!(
        shimmed,
        direct,
        "the caller's view: head, (code, signal), stderr\n{}",
        brief(w)
    );
    // The client got the whole reply after all (it reads the session, a
    // retry of the read…): it replays it.
    let reply = w.server.last_main().expect("turn 1's request").reply;
    assert_eq!(reply.len(), REPLY);
    w.history.push((first.to_owned(), reply));
    w.server.clear_log();
    let second = "Question two.";
    let out = run(w.sb.shimmed(args), w.prompt(second).as_bytes());
    assert!(out.status.success(), "{}", describe(&out));
    w.assert_runs(
        &[("fresh", "first-turn"), ("resumed", "resumed")],
        &brief(w),
    );
    // The model got the new message alone, after one copy of the history.
    let last = w.server.last_main().expect("turn 2's request");
    let users = last.user_texts();
    assert_eq!(
        users.iter().filter(|t| t.contains("Question one.")).count(),
        1,
        "{users:?}"
    );
    assert!(
        users.last().is_some_and(|t| t.trim() == second),
        "{users:?}"
    );
    w.assert_no_shim_errors();
}

/// Text output, cold: the case of the issue.
#[test]
fn a_cold_turn_read_in_part_is_pinned_with_its_whole_reply() {
    let mut w = World::warm(false);
    stops_reading_then_continues(&mut w, &["-p"]);
}

/// JSON output prints the reply in its one result line, which the caller
/// left unread: the pin comes from the session file as well.
#[test]
fn a_cold_json_turn_read_in_part_is_pinned_with_its_whole_reply() {
    let mut w = World::warm(false);
    stops_reading_then_continues(&mut w, &["-p", "--output-format", "json"]);
}
