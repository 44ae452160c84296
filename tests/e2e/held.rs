//! The recognitions of issue 39 held against the direct call: marks that look
//! like words, learned from the structure (one block per message, or a line
//! per message), and a transcript replayed without `-p`. Each runs directly and
//! through the shim, each way with its own sandbox and loopback server, and
//! three turns that must not continue the conversation get what they get
//! without the shim (the same reply, the request's messages as sent, a
//! session of their own):
//! - an edited history: turn 3 with the first message changed;
//! - a quotation: the transcript and its last reply quoted inside a new message;
//! - another conversation whose replies are identical: it never continues the
//!   first, and its own turn 2 holds none of the first's messages.
//!
//! The server answers the newest line of the last user message (less a `Human:`
//! label), so a resumed turn (which sends the new message alone) and the direct
//! call (the whole transcript, the new message last) get the same reply; the
//! third case's server answers every message alike.

use crate::support::clients::Client;
use crate::support::process::{describe, run};
use crate::support::{ApiServer, LoggedRequest, Ran, Sandbox};

/// How the client calls `claude`.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A client of `tests/support/clients.rs`, as it calls.
    Client(Client),
    /// `claude PROMPT`: `Human:`/`Assistant:` labels, no `-p`, stdout a pipe
    /// (the CLI prints; issue 39, item 1).
    WithoutP,
}

impl Shape {
    fn invocation(self, history: &[(String, String)], current: &str) -> (Vec<String>, Vec<u8>) {
        match self {
            Shape::Client(c) => c.render(history, current),
            Shape::WithoutP => (
                vec![crate::support::clients::labels(
                    history, current, "Human", "\n\n",
                )],
                Vec::new(),
            ),
        }
    }

    /// The transcript as text, as a person would quote it.
    fn text(self, history: &[(String, String)], current: &str) -> String {
        match self {
            Shape::Client(Client::WordMarkBlocks) => Client::WordMarkText.prompt(history, current),
            Shape::Client(c) => c.prompt(history, current),
            Shape::WithoutP => crate::support::clients::labels(history, current, "Human", "\n\n"),
        }
    }

    fn reply(self, out: &Ran) -> String {
        match self {
            Shape::Client(c) => c
                .reply(&out.stdout)
                .unwrap_or_else(|| panic!("no reply: {}", describe(out))),
            Shape::WithoutP => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        }
    }
}

/// One way of calling: directly, or through the shim.
struct Way {
    server: ApiServer,
    sb: Sandbox,
    shimmed: bool,
}

impl Way {
    fn new(shimmed: bool, same_reply: bool) -> Way {
        let server = ApiServer::start();
        match same_reply {
            true => server.set_reply(|_| "the same reply to every message".to_owned()),
            false => server.set_reply(|r: &LoggedRequest| {
                // (A continued turn sends the new message without the
                // `Human:` label the client gave it: docs/conversations.md.)
                let last = r.last_user_text().unwrap_or_default();
                let line = last.lines().last().unwrap_or("").trim();
                format!("noted: {}", line.trim_start_matches("Human: "))
            }),
        }
        let mut sb = Sandbox::real(&server);
        sb.set_env("CLAUDE_SHIM_WARM", "0");
        Way {
            server,
            sb,
            shimmed,
        }
    }

    /// A turn: its output, and the request that answered it.
    fn turn(
        &self,
        shape: Shape,
        history: &[(String, String)],
        current: &str,
    ) -> (Ran, LoggedRequest) {
        let (argv, stdin) = shape.invocation(history, current);
        let cmd = match self.shimmed {
            true => self.sb.shimmed(&argv),
            false => self.sb.direct(&argv),
        };
        let out = run(cmd, &stdin);
        assert!(out.status.success(), "{}", describe(&out));
        let req = self.server.last_main().expect("a request");
        (out, req)
    }

    /// `kind` of every managed turn, in order (through the shim).
    fn kinds(&self) -> Vec<String> {
        crate::support::store::run_rows(&self.sb.shim_home)
            .into_iter()
            .map(|r| r.kind)
            .collect()
    }
}

/// What a request asked: each message's role and texts.
fn asked(req: &LoggedRequest) -> (Vec<String>, Vec<String>) {
    (req.user_texts(), req.assistant_texts())
}

/// The conversation's first two turns, then the edited history and the
/// quotation, the same directly and through the shim.
fn edited_and_quoted(shape: Shape) {
    let ways = [Way::new(false, false), Way::new(true, false)];
    let mut seen = Vec::new();
    for way in &ways {
        let mut history: Vec<(String, String)> = Vec::new();
        let mut replies = Vec::new();
        for msg in ["Question one about pears.", "Question two about plums."] {
            let (out, _) = way.turn(shape, &history, msg);
            let reply = shape.reply(&out);
            replies.push(reply.clone());
            history.push((msg.to_owned(), reply));
        }
        // The first message edited: the whole transcript, as sent.
        let mut edited = history.clone();
        edited[0].0 = "Question one about apples.".to_owned();
        let (out, edited_req) = way.turn(shape, &edited, "Question three.");
        let edited_reply = shape.reply(&out);
        // The transcript and its last reply quoted in a new message.
        let quote = format!(
            "Here is a chat I found:\n{}\n{}\nWhat do you make of it?",
            shape.text(&history[..1], "Question two about plums."),
            history[1].1
        );
        let (out, quoted_req) = way.turn(shape, &[], &quote);
        let quoted_reply = shape.reply(&out);
        seen.push((
            replies,
            edited_reply,
            asked(&edited_req),
            quoted_reply,
            asked(&quoted_req),
        ));
    }
    let kinds = ways[1].kinds();
    assert_eq!(
        kinds,
        ["fresh", "resumed", "fresh", "fresh"],
        "{shape:?}: turn 2 resumed; the edited and the quoting turns ran fresh"
    );
    let (direct, shimmed) = (&seen[0], &seen[1]);
    assert_eq!(
        direct.0, shimmed.0,
        "{shape:?}: the replies of turns 1 and 2"
    );
    assert_eq!(direct.1, shimmed.1, "{shape:?}: the edited turn's reply");
    assert_eq!(direct.2, shimmed.2, "{shape:?}: the edited turn's request");
    assert!(
        direct.2 .1.is_empty(),
        "one message with the whole transcript"
    );
    assert_eq!(direct.3, shimmed.3, "{shape:?}: the quoting turn's reply");
    assert_eq!(direct.4, shimmed.4, "{shape:?}: the quoting turn's request");
}

/// Two conversations in one directory, one preamble and every reply alike,
/// their first messages different: the second never continues the first, and
/// its turn 2 resumes its own turn 1.
fn identical_replies(shape: Shape) {
    let way = Way::new(true, true);
    let direct = Way::new(false, true);
    let mut a: Vec<(String, String)> = Vec::new();
    let mut b: Vec<(String, String)> = Vec::new();
    for (chat, msg) in [
        (&mut a, "Tell me about pears."),
        (&mut b, "Tell me about rivets."),
    ] {
        let (out, _) = way.turn(shape, chat, msg);
        chat.push((msg.to_owned(), shape.reply(&out)));
        let (out, _) = direct.turn(shape, &[], msg);
        assert_eq!(shape.reply(&out), chat[0].1, "{shape:?}");
    }
    let a1 = way.server.main_requests()[0].session_id();
    let b1 = way.server.main_requests()[1].session_id();
    assert_ne!(a1, b1, "{shape:?}: two conversations, two sessions");
    let (out, req) = way.turn(shape, &b, "And rivets again?");
    let (direct_out, _) = direct.turn(shape, &b, "And rivets again?");
    assert_eq!(shape.reply(&out), shape.reply(&direct_out), "{shape:?}");
    assert_eq!(req.session_id(), b1, "{shape:?}: B's turn 2 continues B");
    let texts = req.user_texts().join("\n");
    assert!(
        !texts.contains("pears"),
        "{shape:?}: none of A's messages: {texts}"
    );
    assert_eq!(
        way.kinds(),
        ["fresh", "fresh", "resumed"],
        "{shape:?}: {}",
        describe(&out)
    );
}

#[test]
fn word_marks_in_blocks_edited_and_quoted_run_as_directly() {
    edited_and_quoted(Shape::Client(Client::WordMarkBlocks));
}

#[test]
fn word_marks_in_lines_edited_and_quoted_run_as_directly() {
    edited_and_quoted(Shape::Client(Client::WordMarkText));
}

#[test]
fn without_p_edited_and_quoted_run_as_directly() {
    edited_and_quoted(Shape::WithoutP);
}

#[test]
fn word_marks_in_blocks_with_identical_replies_never_cross() {
    identical_replies(Shape::Client(Client::WordMarkBlocks));
}

#[test]
fn word_marks_in_lines_with_identical_replies_never_cross() {
    identical_replies(Shape::Client(Client::WordMarkText));
}

#[test]
fn without_p_with_identical_replies_never_cross() {
    identical_replies(Shape::WithoutP);
}
