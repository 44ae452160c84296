//! A transcript that comes as one argument past 100,000 characters (issue 38
//! saw such a conversation run fresh at every turn). Linux takes at most
//! 128 KiB in one argument, so this is about as long as an argv transcript
//! gets: 40 KB replies, four turns, the last prompt 120,131 characters.

use crate::support::clients::{labels, text_reply};
use crate::support::process::{describe, run};
use crate::support::World;

#[test]
fn a_transcript_in_argv_past_100k_characters_resumes_every_turn() {
    let mut w = World::warm(false);
    w.server.set_reply_size(Some(40_000));
    let messages = [
        "first message.",
        "second message.",
        "third message.",
        "fourth message.",
    ];
    let mut longest = 0;
    for msg in messages {
        let prompt = labels(&w.history, msg, "Human", "\n\n");
        longest = longest.max(prompt.chars().count());
        w.server.clear_log();
        let out = run(w.sb.shimmed(["-p", &prompt]), b"");
        assert!(out.status.success(), "{}\n{}", describe(&out), w.log());
        // The model got one copy of the history each turn.
        let users = w.server.last_main().expect("a request").user_texts();
        assert_eq!(
            users
                .iter()
                .filter(|t| t.contains("first message."))
                .count(),
            1
        );
        w.history.push((msg.to_owned(), text_reply(&out.stdout)));
    }
    assert!(
        longest > 100_000,
        "the last prompt had {longest} characters"
    );
    let kinds: Vec<String> = w.runs().into_iter().map(|r| r.why_code).collect();
    assert_eq!(
        kinds,
        ["first-turn", "resumed", "resumed", "resumed"],
        "{}",
        w.log()
    );
    w.assert_no_shim_errors();
}
