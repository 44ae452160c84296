//! Continuation by content over generated renderers: random user labels
//! (none included), assistant labels, separators, preambles, suffixes, a
//! first message bare until it is history, the newest message labelled
//! apart, one text block or many, a mark around every message (`[User: …]`),
//! short role marks of a symbol or a letter (`> q`, `A r`).
//!
//! - Pure (`continuation::continues`): each turn continues the previous run
//!   and sends only what is new; an edited earlier turn, another
//!   conversation sharing a beginning, or a quotation never matches.
//! - Through the shim and the fake CLI: turns 2..N resume, and the model
//!   sees every user message once (the fake's reply lists what it saw).

use crate::support::process::{run, Input};
use crate::support::store::runs;
use crate::support::turns::{ack, context, shim, tag};
use crate::support::Sandbox;
use claude_shim::continuation::{continues, Earlier};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

/// How one client renders its transcript.
#[derive(Debug, Clone)]
struct Renderer {
    user: String,
    assistant: String,
    /// The label of the newest message, when it differs from `user`.
    newest: Option<String>,
    /// The first message bare at turn 1 (labelled once it is history).
    first_bare: bool,
    separator: String,
    preamble: Option<String>,
    suffix: Option<String>,
    /// Closing tags after each message (`<user>…</user>`).
    closing: bool,
    /// One stream-json message, one text block per message.
    blocks: bool,
    /// Without `-p` (stdout not a terminal: the CLI prints; issue 39, item
    /// 1): as text, `claude PROMPT`; in blocks, stream-json on stdin.
    without_p: bool,
    /// Marks that open and close every message (`[` `User: q` `]`).
    wrap: Option<(String, String)>,
}

fn label() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Z][a-z]{2,7}: ",
        "\\[[A-Z][a-z]{2,7}\\]: ",
        "## [a-z]{3,8}\n",
        "\\*\\*[A-Z][a-z]{2,7}\\*\\* ",
        "[A-Z][a-z]{2,7} said: ",
        "[>»•] ",
        "[A-Z] ",
    ]
}

fn wrap() -> impl Strategy<Value = Option<(String, String)>> {
    prop::option::weighted(
        0.3,
        prop_oneof![
            Just(("[".to_owned(), "]".to_owned())),
            Just(("\"".to_owned(), "\"".to_owned())),
            Just(("(".to_owned(), ")".to_owned())),
        ],
    )
}

/// The user's and the assistant's labels: drawn apart, or two marks that
/// look like words (`u `/`a `, `me `/`ai `), learned from the structure
/// (issue 39, item 2).
fn labels() -> impl Strategy<Value = (String, String)> {
    let apart = (
        prop_oneof![Just(String::new()), label()],
        prop_oneof![
            label(),
            "--- [a-z]{3,8} [a-z]{3,8} ---\n",
            "\\(earlier answer\\)\n",
        ],
    );
    let words = prop_oneof![
        ("[a-z]", "[a-z]"),
        ("[a-z]{2}", "[a-z]{2}"),
        ("[a-z]{3}", "[a-z]{3}"),
    ]
    .prop_filter("two marks", |(u, a)| u != a)
    .prop_map(|(u, a)| (format!("{u} "), format!("{a} ")));
    prop_oneof![4 => apart, 1 => words]
}

fn renderer() -> impl Strategy<Value = Renderer> {
    (
        labels(),
        // The newest message as the others, labelled apart, or bare while
        // every earlier one has its label (issue 39, item 2).
        prop_oneof![
            2 => Just(None),
            1 => "[A-Z][a-z]{2,6} [a-z]{3,7}: ".prop_map(Some),
            1 => Just(Some(String::new())),
        ],
        any::<bool>(),
        prop_oneof![
            Just("\n".to_owned()),
            Just("\n\n".to_owned()),
            Just("\n---\n".to_owned())
        ],
        prop::option::of("[A-Z][a-z]{3,8} [a-z ]{5,30}\\.\n\n"),
        prop::option::of("\n\n[A-Z][a-z]{3,8} [a-z ]{3,20}\\."),
        any::<bool>(),
        prop::bool::weighted(0.25),
        wrap(),
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(
                (user, assistant),
                newest,
                first_bare,
                separator,
                preamble,
                suffix,
                closing,
                blocks,
                wrap,
                without_p,
            )| {
                // Marks that look like words are learned only where each
                // message gains its mark once it is history (issue 39).
                let words = |l: &str| {
                    let w = l.trim_end_matches(' ');
                    l.ends_with(' ')
                        && (1..=3).contains(&w.len())
                        && w.chars().all(|c| c.is_ascii_lowercase())
                };
                let (newest, first_bare) = match words(&user) && words(&assistant) {
                    true => (Some(String::new()), true),
                    false => (newest, first_bare),
                };
                // Marks around messages whose labels stand inline.
                let own_line = [&user, &assistant]
                    .into_iter()
                    .chain(&newest)
                    .any(|l| l.ends_with('\n'));
                let wrap = wrap.filter(|_| !own_line);
                Renderer {
                    user,
                    assistant,
                    newest,
                    first_bare,
                    separator,
                    preamble,
                    suffix,
                    closing: closing && wrap.is_none(),
                    blocks,
                    wrap,
                    without_p,
                }
            },
        )
}

impl Renderer {
    /// The message texts of one turn, in order: preamble, history, newest.
    fn parts(&self, history: &[(String, String)], current: &str) -> Vec<String> {
        let close = |role: &str, s: String| match self.closing {
            true => format!("{s}</{role}>"),
            false => s,
        };
        // A wrapped message: the opening mark before its (inline) label.
        let render = |label: &str, text: &str| match &self.wrap {
            Some((open, shut)) => format!("{open}{label}{text}{shut}"),
            None => format!("{label}{text}"),
        };
        let mut parts = Vec::new();
        if let Some(p) = &self.preamble {
            parts.push(p.trim_end().to_owned());
        }
        for (u, a) in history {
            parts.push(close("user", render(&self.user, u)));
            parts.push(close("assistant", render(&self.assistant, a)));
        }
        let label = match (history.is_empty() && self.first_bare, &self.newest) {
            (true, _) => "",
            (false, Some(l)) => l.as_str(),
            (false, None) => self.user.as_str(),
        };
        parts.push(close("user", render(label, current)));
        if let Some(s) = &self.suffix {
            parts.push(s.trim_start().to_owned());
        }
        parts
    }

    /// The prompt as text (what the shim reads).
    fn text(&self, history: &[(String, String)], current: &str) -> String {
        let sep = match self.blocks {
            true => "\n\n",
            false => self.separator.as_str(),
        };
        self.parts(history, current).join(sep)
    }

    /// argv and stdin of a turn.
    fn invocation(&self, history: &[(String, String)], current: &str) -> (Vec<String>, Vec<u8>) {
        match self.blocks {
            false if self.without_p => (vec![self.text(history, current)], Vec::new()),
            false => (vec!["-p".into()], self.text(history, current).into_bytes()),
            true => {
                let blocks: Vec<_> = self
                    .parts(history, current)
                    .into_iter()
                    .map(|t| json!({"type": "text", "text": t}))
                    .collect();
                let line = json!({"type": "user", "message": {"role": "user", "content": blocks}});
                (
                    [
                        "-p",
                        "--input-format",
                        "stream-json",
                        "--output-format",
                        "stream-json",
                        "--verbose",
                    ]
                    .into_iter()
                    .skip(usize::from(self.without_p))
                    .map(String::from)
                    .collect(),
                    format!("{line}\n").into_bytes(),
                )
            }
        }
    }

    fn reply(&self, stdout: &[u8]) -> String {
        match self.blocks {
            false => String::from_utf8_lossy(stdout).trim().to_owned(),
            true => crate::support::clients::result_reply(stdout),
        }
    }
}

/// A user message of turn `k`: words around its tag.
fn message(conv: &str, k: usize) -> String {
    format!("please consider {} and answer", tag(conv, k))
}

const TURNS: usize = 4;

/// Each turn of a generated renderer continues the run before it, and what
/// it sends holds the new message and no earlier message or reply.
#[test]
fn every_turn_continues_the_one_before_and_sends_only_what_is_new() {
    let mut runner = TestRunner::new(Config::with_cases(512));
    runner
        .run(&renderer(), |r| {
            let mut history: Vec<(String, String)> = Vec::new();
            let mut earlier: Option<(String, String)> = None;
            for k in 1..=TURNS {
                let current = message("c", k);
                let prompt = r.text(&history, &current);
                if let Some((prev, reply)) = &earlier {
                    let replies = [reply.clone()];
                    let e = Earlier {
                        prompt: prev,
                        replies: &replies,
                        turns: k - 1,
                    };
                    let c = continues(&prompt, &e);
                    prop_assert!(c.is_some(), "turn {k} of {r:?}:\n{prompt}");
                    let delta = c.unwrap().delta_text(&prompt).to_owned();
                    prop_assert!(delta.contains(&current), "{delta:?}");
                    for (u, a) in &history {
                        prop_assert!(!delta.contains(u.as_str()) && !delta.contains(a.as_str()));
                    }
                }
                let reply = format!("reply {k} to {}", tag("c", k).trim_matches(['<', '>']));
                earlier = Some((prompt, reply.clone()));
                history.push((current, reply));
            }
            Ok(())
        })
        .unwrap();
}

/// Proof of receipt keeps its force: an edited earlier message or reply, or
/// another conversation that shares the beginning and got the same replies,
/// or the old prompt and reply quoted after a sentence, never continue.
#[test]
fn edits_other_conversations_and_quotations_never_continue() {
    let mut runner = TestRunner::new(Config::with_cases(512));
    let case = (renderer(), 0..TURNS - 1, any::<bool>());
    runner
        .run(&case, |(r, edited, edit_reply)| {
            let history: Vec<(String, String)> = (1..TURNS)
                .map(|k| (message("c", k), format!("reply number {k}")))
                .collect();
            let (prev_h, last) = history.split_at(TURNS - 2);
            let earlier = r.text(prev_h, &last[0].0);
            let replies = [last[0].1.clone()];
            let e = Earlier {
                prompt: &earlier,
                replies: &replies,
                turns: TURNS - 1,
            };
            // Edited: one earlier message or reply changed.
            let mut changed = history.clone();
            match (edit_reply && edited < TURNS - 2, edited % 2 == 0) {
                (true, true) => changed[edited].1.push_str(" (edited)"),
                (true, false) => changed[edited].1.insert_str(0, "(edited) "),
                (false, _) => changed[edited].0 = changed[edited].0.replace("please", "kindly"),
            }
            let prompt = r.text(&changed, &message("c", TURNS));
            prop_assert!(
                continues(&prompt, &e).is_none(),
                "edited {edited}:\n{prompt}"
            );
            // Another conversation: the same replies, one user message other.
            let mut other = history.clone();
            other[edited].0 = message("d", edited + 1);
            let prompt = r.text(&other, &message("d", TURNS));
            prop_assert!(continues(&prompt, &e).is_none(), "other:\n{prompt}");
            // Quoted after a sentence, with a question after it.
            let prompt = format!(
                "Here is a chat log I found online:\n{earlier}\n{}\nWhat do you make of it?",
                last[0].1
            );
            prop_assert!(continues(&prompt, &e).is_none(), "quoted:\n{prompt}");
            Ok(())
        })
        .unwrap();
}

/// `TURNS` turns of `r` through the shim and the fake CLI, in a sandbox of
/// their own: every reply the one the whole transcript gets without the shim
/// (the fake acknowledges each user message it saw: history twice would
/// show). The runs' kinds and the sandbox's context, or what went wrong.
fn converse(r: &Renderer) -> Result<(Vec<String>, String), String> {
    let w = Sandbox::new();
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=TURNS {
        let current = message("c", k);
        let (args, stdin) = r.invocation(&history, &current);
        let mut cmd = shim(&w);
        cmd.args(&args);
        let ran = run(cmd, Input::Bytes(stdin));
        if !ran.status.success() {
            return Err(format!("turn {k} of {r:?}: {}\n{}", ran.err(), context(&w)));
        }
        let reply = r.reply(&ran.stdout);
        let seen: Vec<String> = (1..=k).map(|i| tag("c", i)).collect();
        if reply != ack(&seen) {
            return Err(format!("turn {k} of {r:?}: {reply:?}\n{}", context(&w)));
        }
        history.push((current, reply));
    }
    let kinds = runs(&w).into_iter().map(|r| r.kind).collect();
    Ok((kinds, context(&w)))
}

/// Through the shim and the fake CLI: a sample of generated renderers, each
/// for `TURNS` turns ([`converse`]). Turns 2..N resume.
#[test]
fn generated_renderers_resume_through_the_shim() {
    let mut runner = TestRunner::new(Config::with_cases(24));
    let tried = std::cell::Cell::new(0);
    runner
        .run(&renderer(), |r| {
            let (kinds, context) = converse(&r).map_err(TestCaseError::fail)?;
            tried.set(tried.get() + 1);
            prop_assert!(
                kinds[1..].iter().all(|k| k == "resumed"),
                "{r:?}: {kinds:?}\n{context}"
            );
            Ok(())
        })
        .unwrap();
    eprintln!("generated renderers resumed: all {} tried", tried.get());
}

/// Issue 39, item 2: a preamble, then each earlier message with a short
/// role mark inline (a symbol or a letter), then the newest message bare; a
/// message gets its mark only once it is history. No turn's prompt is in
/// the next one verbatim. In one stream-json message of a block per
/// message, and as plain text; through the shim and the fake CLI.
#[test]
fn marks_that_appear_once_a_message_is_history_resume() {
    let pairs = [
        ("› ", "● "),
        ("U ", "A "),
        ("> ", "• "),
        ("u ", "a "),
        ("me ", "ai "),
    ];
    for (user, assistant) in pairs {
        for blocks in [true, false] {
            let r = Renderer {
                user: user.into(),
                assistant: assistant.into(),
                newest: Some(String::new()),
                first_bare: true,
                separator: "\n".into(),
                preamble: Some("You are a terse assistant in an editor.\n\n".into()),
                suffix: None,
                closing: false,
                blocks,
                wrap: None,
                without_p: false,
            };
            let (kinds, context) = converse(&r).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                kinds,
                ["fresh", "resumed", "resumed", "resumed"],
                "{r:?}\n{context}"
            );
        }
    }
}

/// `explain` names the rule that recognised a prompt, and `log` says it for
/// each resumed turn: a dialect, or the run a prompt continues by content.
#[test]
fn explain_and_log_name_the_rule() {
    let w = Sandbox::new();
    let marker = Renderer {
        user: String::new(),
        assistant: "--- previous reply ---\n".into(),
        newest: None,
        first_bare: true,
        separator: "\n\n".into(),
        preamble: None,
        suffix: None,
        closing: false,
        blocks: false,
        wrap: None,
        without_p: false,
    };
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=2 {
        let current = message("m", k);
        let (args, stdin) = marker.invocation(&history, &current);
        let mut cmd = shim(&w);
        cmd.args(&args);
        let ran = run(cmd, Input::Bytes(stdin));
        assert!(ran.status.success(), "{}", ran.err());
        history.push((current, marker.reply(&ran.stdout)));
    }
    let next = marker.text(&history, &message("m", 3));
    std::fs::write(w.work.join("next.txt"), &next).unwrap();
    let explained = run(manager(&w, &["explain", "next.txt"]), Input::Null);
    let out = explained.out();
    assert!(
        out.contains("dialect:   continues run ") && out.contains("by content, turn 2 of session"),
        "{out}"
    );
    let json = run(manager(&w, &["explain", "--json", "next.txt"]), Input::Null);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert!(
        v["rule"].as_str().unwrap().starts_with("continues run "),
        "{v}"
    );
    assert_eq!(v["plan"]["kind"], "resume", "{v}");
    let log = run(w.cli(&["log", "--json"]), Input::Null);
    let rows: serde_json::Value = serde_json::from_slice(&log.stdout).expect("log json");
    let why = rows["turns"][0]["why"].as_str().unwrap_or("").to_owned();
    assert!(
        why.contains("continues run ") && why.contains("by content"),
        "{rows}"
    );
    // A dialect's turn says which dialect.
    let wrapper = Renderer {
        user: "Human: ".into(),
        assistant: "Assistant: ".into(),
        first_bare: false,
        ..marker
    };
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=2 {
        let current = message("h", k);
        let (args, stdin) = wrapper.invocation(&history, &current);
        let mut cmd = shim(&w);
        cmd.args(&args);
        let ran = run(cmd, Input::Bytes(stdin));
        assert!(ran.status.success(), "{}", ran.err());
        history.push((current, wrapper.reply(&ran.stdout)));
    }
    let log = run(w.cli(&["log", "--json"]), Input::Null);
    let rows: serde_json::Value = serde_json::from_slice(&log.stdout).expect("log json");
    let why = rows["turns"][0]["why"].as_str().unwrap_or("");
    assert!(why.ends_with("(dialect human-assistant)"), "{rows}");
}

/// `claude-shim ARGS` with the shimmed PATH, so it finds the (fake) real CLI.
fn manager(w: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut cmd = w.manager();
    cmd.args(args);
    cmd
}
