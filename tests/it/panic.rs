//! A panic in the shim's own logic (understanding or deciding a turn) never
//! reaches the caller: the turn runs exactly as asked, and the panic is
//! written to errors.log. `CLAUDE_SHIM_TEST_PANIC=1` makes the decision panic.

use crate::support::process::{assert_same, both, Input};
use crate::support::Sandbox;

#[test]
fn a_panic_while_deciding_runs_the_turn_as_asked_and_is_logged() {
    let w = Sandbox::scripted();
    let env = [
        ("CLAUDE_SHIM_TEST_PANIC", "1"),
        ("FAKE_STDOUT", "the answer\n"),
        ("FAKE_STDERR", "a notice\n"),
        ("FAKE_EXIT", "3"),
    ];
    let prompt = "Human: a\n\nAssistant: b\n\nHuman: c";
    let (shim, direct) = both(&w, &["-p"], &env, || {
        Input::Bytes(prompt.as_bytes().to_vec())
    });
    assert_same(&shim, &direct);
    assert!(!shim.err().contains("panic"), "{}", shim.err());
    let log = std::fs::read_to_string(w.shim_home.join("errors.log")).unwrap_or_default();
    assert!(
        log.contains("internal error") && log.contains("CLAUDE_SHIM_TEST_PANIC"),
        "errors.log: {log}"
    );
    // The runs log says why the turn ran unchanged.
    let db = rusqlite::Connection::open(w.shim_home.join("shim.db")).unwrap();
    let why: String = db
        .query_row(
            "SELECT why_code FROM runs ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(why, "internal-error");
}
