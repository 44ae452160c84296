//! `claude-shim sessions` against the REAL CLI: a session made without the shim
//! (as a person or an IDE would) is listed with its first message next to the
//! shim's pinned conversations; a CLI working a session right now is listed first,
//! as running; a conversation's live CLI shows as warm.

use crate::support::clients::{labels, text_reply};
use crate::support::process::eventually;
use crate::support::{describe, run, ApiServer, Input, RealCli, Sandbox};
use serde_json::Value;
use std::time::Duration;

/// `claude-shim sessions ARGS` in the sandbox's work directory.
fn sessions(sb: &Sandbox, args: &[&str]) -> Value {
    let out = run(sb.cli(&[&["sessions"], args].concat()), Input::Null);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(out.stderr.is_empty(), "{}", describe(&out));
    serde_json::from_slice(&out.stdout).expect("sessions --json")
}

fn by_title<'a>(list: &'a Value, title: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"].as_str().is_some_and(|t| t.contains(title)))
        .unwrap_or_else(|| panic!("no session titled {title:?} in {list:#}"))
}

/// Three turns of a replaying client through the shim.
fn conversation(sb: &Sandbox) {
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=3 {
        let msg = format!("shim turn {k}");
        let out = run(
            sb.shimmed(["-p"]),
            labels(&history, &msg, "Human", "\n\n").as_bytes(),
        );
        assert!(out.status.success(), "{}", describe(&out));
        history.push((msg, text_reply(&out.stdout)));
    }
}

#[test]
fn sessions_lists_a_session_made_without_the_shim_next_to_the_pinned_ones() {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.set_env("CLAUDE_SHIM_WARM", "0");
    // Made by hand: the real CLI, no shim anywhere.
    let direct = run(sb.direct(["-p", "a question asked by hand"]), b"");
    assert!(direct.status.success(), "{}", describe(&direct));
    conversation(&sb);

    let list = sessions(&sb, &["--json"]);
    assert_eq!(list.as_array().unwrap().len(), 2, "{list:#}");
    let by_hand = by_title(&list, "a question asked by hand");
    assert_eq!(by_hand["shim"], Value::Null, "never through the shim");
    assert_eq!(by_hand["messages"], 2);
    assert!(by_hand["input_tokens"].as_u64().unwrap() > 0);
    // The release that wrote it: the pinned one, or `$CLAUDE_SHIM_TEST_CLI`'s.
    assert_eq!(by_hand["version"], RealCli::version().to_string().as_str());
    let pinned = by_title(&list, "shim turn 1");
    assert_eq!(pinned["shim"]["turns"], 3, "{pinned:#}");
    assert_eq!(pinned["messages"], 6);
    assert_eq!(pinned["compactions"], 0);
    assert!(pinned["shim"]["conversation"].is_string());
    assert_eq!(pinned["running"], Value::Null);
    let file = pinned["path"].as_str().unwrap();
    assert_eq!(
        pinned["file_size"].as_u64(),
        std::fs::metadata(file).ok().map(|m| m.len())
    );
    // Newest first.
    assert_eq!(list[0]["id"], pinned["id"]);

    // Another directory: nothing there; --all: both.
    let elsewhere = sb.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let none = sessions(&sb, &["--json", "--cwd", elsewhere.to_str().unwrap()]);
    assert_eq!(none, serde_json::json!([]));
    assert_eq!(
        sessions(&sb, &["--json", "--all"])
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // For people: the same, as a table.
    let table = run(sb.cli(&["sessions"]), Input::Null).out();
    assert!(table.starts_with("2 sessions in "), "{table}");
    assert!(
        table.contains("a question asked by hand") && table.contains("3 turns"),
        "{table}"
    );
}

#[test]
fn a_session_being_worked_is_listed_first_as_running_and_a_live_cli_as_warm() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    conversation(&sb); // warm turns on: its live CLI stays
    let list = sessions(&sb, &["--json"]);
    let warm = by_title(&list, "shim turn 1");
    assert_eq!(warm["warm"]["state"], "idle", "{warm:#}");
    assert_eq!(
        warm["running"],
        Value::Null,
        "an idle live CLI is not running"
    );

    // A CLI started by hand, its model slow to answer.
    server.set_delay(|_| Duration::from_secs(60));
    let mut child = sb
        .direct(["-p", "a long question asked by hand"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let list = eventually(
        Duration::from_secs(60),
        "the session listed as running",
        || {
            let list = sessions(&sb, &["--json"]);
            (list.as_array().unwrap().len() == 2 && list[0]["running"].is_object()).then_some(list)
        },
    );
    assert_eq!(list[0]["title"], "a long question asked by hand");
    assert_eq!(list[0]["running"]["pid"], child.id());
    assert_eq!(list[0]["shim"], Value::Null);
    let _ = child.kill();
    let _ = child.wait();
    server.clear_delay();
    // Killed: its stale process file does not make it running.
    let list = sessions(&sb, &["--json"]);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["running"].is_null()),
        "{list:#}"
    );
}
