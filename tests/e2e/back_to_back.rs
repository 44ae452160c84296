//! A turn that comes while its conversation's live CLI is still finishing
//! the turn before (issue 38): a streaming client acts on the `result` and
//! sends the next turn while the previous `claude` still runs (here: it
//! keeps that call's stdin open a little longer, as the Agent SDKs do with
//! hooks or a permission callback). The live CLI is lent to the first call
//! until it ends; the next turn waits for it — it will be free far sooner
//! than a new CLI could start — and runs warm. It used to run cold (the
//! keeper answered `busy`), with the first turn's CLI still alive beside it.

use crate::support::clients::user_line;
use crate::support::process::{reader, wait_timeout};
use crate::support::{describe, run, World};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

const ARGS: [&str; 6] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// The `result` text of a stream-json result line.
fn result_text(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v["type"] == "result").then(|| v["result"].as_str().map(str::to_owned))?
}

#[test]
fn the_next_turn_at_the_result_waits_for_the_live_cli_and_runs_warm() {
    let w = World::new();
    // Turn 1: its result read, its stdin still open.
    let first = "Human: Question one.";
    let mut cmd = w.sb.shimmed(ARGS);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut one = cmd.spawn().expect("spawn turn 1");
    let mut stdin = one.stdin.take().unwrap();
    stdin
        .write_all(format!("{}\n", user_line(first, "user")).as_bytes())
        .unwrap();
    let err = reader(one.stderr.take());
    let mut out = BufReader::new(one.stdout.take().unwrap());
    let mut reply = None;
    let mut line = String::new();
    while reply.is_none() {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "turn 1 ended without a result\n{}",
            w.context()
        );
        reply = result_text(&line);
    }
    let reply = reply.unwrap();
    // Turn 2 at once, while turn 1's call still runs.
    let second = format!("{first}\n\nAssistant: {reply}\n\nHuman: Question two.");
    let sb = &w.sb;
    let two = std::thread::scope(|s| {
        let two = s.spawn(|| {
            run(
                sb.shimmed(ARGS),
                format!("{}\n", user_line(&second, "user")).as_bytes(),
            )
        });
        std::thread::sleep(Duration::from_millis(500));
        drop(stdin);
        two.join().unwrap()
    });
    let status = wait_timeout(&mut one, Duration::from_secs(60)).expect("turn 1 ends");
    let rest: Vec<String> = out.lines().map_while(Result::ok).collect();
    assert!(status.success(), "turn 1: {status:?} {rest:?}");
    assert!(err.join().unwrap().is_empty());
    assert!(two.status.success(), "{}", describe(&two));
    let replied = String::from_utf8_lossy(&two.stdout)
        .lines()
        .find_map(result_text);
    assert!(
        replied.is_some_and(|r| r.contains("Question two.")),
        "{}",
        describe(&two)
    );
    let runs: Vec<(String, String)> = w.runs().into_iter().map(|r| (r.kind, r.engine)).collect();
    assert_eq!(
        runs,
        [
            ("fresh".to_owned(), "live".to_owned()),
            ("resumed".to_owned(), "warm".to_owned())
        ],
        "{}",
        w.context()
    );
    // One live CLI for the conversation: the one both turns ran in.
    let last = w.server.last_main().expect("turn 2's request");
    assert_eq!(
        last.user_texts()
            .iter()
            .filter(|t| t.contains("Question one."))
            .count(),
        1,
        "{}",
        w.context()
    );
    w.assert_no_shim_errors();
}

/// README's demo as a program runs it: `claude -p "$q"`, twice in a row,
/// from a caller that gives each call a stdin pipe and closes it a moment
/// after the start (50 ms here; tens of ms under load). The shim used to
/// look at that pipe at once, find it open, and run the turn cold (a cold
/// `-p` appends piped stdin to the prompt): turn 1 ran `fresh, cold` and
/// turn 2 started a live CLI of its own, `resumed, live` (issue 38). The
/// pipe now gets a moment to reach its end: `fresh, live`, `resumed, warm`.
#[test]
fn a_caller_that_closes_stdin_just_after_the_start_gets_warm_turns() {
    let w = World::new();
    let call = |prompt: &str| {
        let mut cmd = w.sb.shimmed(["-p", prompt]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        let stdin = child.stdin.take();
        let out = reader(child.stdout.take());
        let err = reader(child.stderr.take());
        std::thread::sleep(Duration::from_millis(50));
        drop(stdin);
        let status = wait_timeout(&mut child, Duration::from_secs(120)).expect("it ends");
        let (out, err) = (out.join().unwrap(), err.join().unwrap());
        assert!(
            status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&err),
            w.log()
        );
        String::from_utf8(out).expect("UTF-8").trim_end().to_owned()
    };
    let q = "Human: Name a prime number. Answer with the number only.";
    let a = call(q);
    call(&format!("{q}\n\nAssistant: {a}\n\nHuman: Add one to it."));
    let runs: Vec<(String, String)> = w.runs().into_iter().map(|r| (r.kind, r.engine)).collect();
    let want = [("fresh", "live"), ("resumed", "warm")].map(|(k, e)| (k.to_owned(), e.to_owned()));
    assert_eq!(runs, want, "{}", w.log());
}
