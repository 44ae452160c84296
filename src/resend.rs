//! A live stream-json session whose client re-sends its transcript: a router
//! that keeps one CLI and writes each call's whole conversation as the next
//! user message (`[System: s]\n\nu1\n\n[Assistant: a1]\n\nu2`). Without the
//! shim the model gets k copies of the first message at turn k.
//!
//! When a later message is, byte for byte, the session's previous message as
//! the client sent it, then a label, then the reply the CLI gave it in this
//! process, then something new (continuation by content, with nothing
//! relabelled: see [`crate::continuation`]), only the new part goes. By
//! induction the stripped part is exactly what the session holds. Anything
//! else passes unchanged, and any doubt — a message that is not one text, a
//! second message before the first's result, a reply not captured exactly
//! (tool calls, an error, an interrupt), a compaction — ends the cutting for
//! the rest of the process.
//!
//! Pure: the runner feeds it the caller's lines and the CLI's results.

use crate::continuation::{self, Earlier};
use crate::observe::Observation;
use serde_json::Value;
use std::ops::Range;

/// What becomes of a line the caller wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// As it is.
    Pass,
    /// This line instead: the message's new part only.
    Cut(Vec<u8>),
}

/// One process's session, as far as re-sent transcripts go.
#[derive(Debug, Default)]
pub struct Session {
    state: State,
    /// What the observation held at the last result.
    mark: Mark,
    /// Later messages (after the first), and those cut.
    pub later: usize,
    pub cut: usize,
    /// Bytes of text not sent again.
    pub saved: usize,
}

#[derive(Debug, Default)]
enum State {
    /// Every line passes as it is.
    #[default]
    Off,
    /// A message is with the CLI: its text as the client sent it.
    Asked { text: String, turns: usize },
    /// The CLI answered it: the session holds `text`, then `reply`.
    Answered(Held),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    text: String,
    reply: String,
    /// User messages up to this one.
    turns: usize,
}

/// Counts in the observation: what the turn since the last result added.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Mark {
    texts: usize,
    tools: usize,
    compactions: usize,
    results: usize,
}

impl Mark {
    fn of(obs: &Observation) -> Mark {
        Mark {
            texts: obs.assistant_texts.len(),
            tools: obs.assistant_tools,
            compactions: obs.compactions,
            results: obs.results,
        }
    }
}

/// Whether a call's later messages may be cut: stream-json both ways (the
/// CLI's results are read), and no echo of the messages the CLI got.
pub fn armed(m: &crate::invocation::Managed) -> bool {
    use crate::invocation::{InputFormat, OutputFormat};
    m.input == InputFormat::StreamJson
        && m.output == OutputFormat::StreamJson
        && !m.args.has("replay-user-messages")
}

/// Whether a session that starts with `line` (and no other user line) may
/// have its later messages cut: one text, not blocks or images.
pub fn starts(line: &[u8], alone: bool) -> bool {
    alone && message_text(line).is_some()
}

impl Session {
    /// The session's first message was `line` (the turn's): `armed` when
    /// the call is one whose later messages may be cut ([`armed`]), `alone`
    /// when no other user line came with it.
    pub fn begin(&mut self, line: &[u8], alone: bool, armed: bool) {
        self.mark = Mark::default();
        self.state = match (armed && alone).then(|| message_text(line)).flatten() {
            Some(text) => State::Asked { text, turns: 1 },
            None => State::Off,
        };
    }

    /// Whether every line passes as it is from now on.
    pub fn off(&self) -> bool {
        matches!(self.state, State::Off)
    }

    /// A complete line the caller wrote after the first message.
    pub fn input(&mut self, line: &[u8]) -> Line {
        if self.off() || !is_user(line) {
            return Line::Pass;
        }
        self.later += 1;
        let held = match std::mem::take(&mut self.state) {
            State::Answered(h) => h,
            // A second message before the first's result (or one after a
            // doubt): from here on nothing is known for sure.
            State::Asked { .. } | State::Off => return Line::Pass,
        };
        let Some(text) = message_text(line) else {
            return Line::Pass;
        };
        let cut = resent(&text, &held).and_then(|new| {
            let out = crate::prompt::replace_stream_text(line, &text[new.clone()])?;
            Some((out, text.len() - new.len()))
        });
        self.state = State::Asked {
            text,
            turns: held.turns + 1,
        };
        match cut {
            Some((out, saved)) => {
                self.cut += 1;
                self.saved += saved;
                Line::Cut(out)
            }
            None => Line::Pass,
        }
    }

    /// The CLI printed a result; `obs` is its output read so far.
    pub fn result(&mut self, obs: &Observation) {
        let mark = Mark::of(obs);
        let since = std::mem::replace(&mut self.mark, mark);
        let state = std::mem::take(&mut self.state);
        let State::Asked { text, turns } = state else {
            // A result no message of ours asked for: off.
            return;
        };
        if let Some(reply) = exact_reply(obs, since, mark) {
            self.state = State::Answered(Held { text, reply, turns });
        }
    }
}

/// The reply the turn since `since` gave, when the session holds exactly
/// that: one successful result, one text from the model equal to it, no
/// tool call, no compaction.
fn exact_reply(obs: &Observation, since: Mark, now: Mark) -> Option<String> {
    let r = obs.result.as_ref()?;
    let one = now.results == since.results + 1
        && now.tools == since.tools
        && now.compactions == since.compactions
        && now.texts == since.texts + 1
        && !r.is_error
        && r.subtype == "success";
    let text = r.text.as_deref()?;
    let said = obs.assistant_texts.get(since.texts)?;
    (one && said == text && !text.trim().is_empty()).then(|| text.to_owned())
}

/// Where the new part of `text` starts, when `text` re-sends `held`:
/// its message byte for byte, then a label on a new line, its reply, and
/// something new (the reply's closing mark and blank lines not part of it).
fn resent(text: &str, held: &Held) -> Option<Range<usize>> {
    if !text.starts_with(held.text.as_str()) {
        return None;
    }
    let replies = [held.reply.clone()];
    let earlier = Earlier {
        prompt: &held.text,
        replies: &replies,
        turns: held.turns,
    };
    let c = continuation::continues(text, &earlier)?;
    let base = held.text.len();
    // Exact: the reply right after the message, only a label between them
    // (continuation by content saw to that), on a line of its own.
    let glue = text.get(base..c.reply.start)?;
    glue.contains('\n').then_some(c.delta)
}

/// Whether a line is a user message (whatever its content).
fn is_user(line: &[u8]) -> bool {
    matches!(
        crate::events::Event::parse(line),
        Some(crate::events::Event::User(_))
    )
}

/// The text of a user line whose content is that text alone: a string, or
/// one text block. Anything else (images, tool results, several blocks, a
/// subagent's message) is not.
fn message_text(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "user" || v["message"]["role"] != "user" || !v["parent_tool_use_id"].is_null() {
        return None;
    }
    match &v["message"]["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => match &blocks[..] {
            [b] if b["type"] == "text" => b["text"].as_str().map(str::to_owned),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ResultEvent;

    fn user(text: &str) -> Vec<u8> {
        format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":{}}},\"parent_tool_use_id\":null,\"session_id\":\"default\"}}\n",
            serde_json::json!(text)
        )
        .into_bytes()
    }

    /// The observation after the model said `reply` (as one text, once).
    fn answered(obs: &mut Observation, reply: &str) {
        obs.assistant_texts.push(reply.into());
        obs.results += 1;
        obs.result = Some(ResultEvent {
            subtype: "success".into(),
            text: Some(reply.into()),
            ..Default::default()
        });
    }

    fn cut_text(line: &Line) -> Option<String> {
        match line {
            Line::Cut(l) => crate::prompt::stream_text(l),
            Line::Pass => None,
        }
    }

    /// A router's session: each message the transcript so far.
    #[test]
    fn a_re_sent_transcript_goes_as_its_new_message() {
        let mut s = Session::default();
        let mut obs = Observation::default();
        let mut transcript = "[System: be brief]\n\nu1".to_owned();
        s.begin(&user(&transcript), true, true);
        for k in 1..=4 {
            let reply = format!("a{k}");
            answered(&mut obs, &reply);
            s.result(&obs);
            transcript = format!("{transcript}\n\n[Assistant: {reply}]\n\nu{}", k + 1);
            let got = s.input(&user(&transcript));
            assert_eq!(cut_text(&got).as_deref(), Some(&*format!("u{}", k + 1)));
            // The rest of the line is as it was.
            let Line::Cut(l) = got else { unreachable!() };
            let v: Value = serde_json::from_slice(&l).unwrap();
            assert_eq!(v["session_id"], "default");
            assert!(l.ends_with(b"\n"));
        }
        assert_eq!((s.later, s.cut), (4, 4));
        // Other lines pass, and change nothing.
        let control = b"{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"set_model\"}}\n";
        assert_eq!(s.input(control), Line::Pass);
    }

    /// A first message with no closing mark of its own: the `]` after the
    /// reply closes the `[` its label opened, so turn 2 is cut as turns 3
    /// and later are; a reply edited to end in `]` is not.
    #[test]
    fn turn_2_is_cut_when_the_first_message_has_no_bracket() {
        let first = "u1 and nothing else";
        let mut s = Session::default();
        let mut obs = Observation::default();
        s.begin(&user(first), true, true);
        answered(&mut obs, "a1");
        s.result(&obs);
        let got = s.input(&user(&format!("{first}\n\n[Assistant: a1]\n\nu2")));
        assert_eq!(cut_text(&got).as_deref(), Some("u2"));
        let mut s = Session::default();
        s.begin(&user(first), true, true);
        s.result(&obs);
        let edited = format!("{first}\n\n[Assistant: a1]]\n\nu2");
        assert_eq!(s.input(&user(&edited)), Line::Pass);
        // No bracket opened before the reply: a `]` after it is no mark.
        let mut s = Session::default();
        s.begin(&user(first), true, true);
        s.result(&obs);
        let unopened = format!("{first}\n\nAssistant: a1]\n\nu2");
        assert_eq!(s.input(&user(&unopened)), Line::Pass);
    }

    #[test]
    fn anything_but_the_session_s_own_messages_passes() {
        let t1 = "[System: be brief]\n\nu1";
        let resend = |t: &str| format!("{t}\n\n[Assistant: a1]\n\nu2");
        let cases: &[(&str, &str)] = &[
            // Another first message, one byte off.
            (
                "[System: be brief]\n\nu1x\n\n[Assistant: a1]\n\nu2",
                "a byte added to the message",
            ),
            (
                "[System: be brief]\n\nU1\n\n[Assistant: a1]\n\nu2",
                "a byte changed",
            ),
            (
                "[System: be brief]\n\nu1\n\n[Assistant: a2]\n\nu2",
                "another reply",
            ),
            (
                "[System: be brief]\n\nu1\n\n[Assistant: a1 and more]\n\nu2",
                "the reply edited",
            ),
            // The session's messages quoted in new text.
            (
                "Look at this:\n[System: be brief]\n\nu1\n\n[Assistant: a1]\n\nu2",
                "quoted",
            ),
            (
                "[System: be brief]\n\nu1 [Assistant: a1]\n\nu2",
                "no line break before the label",
            ),
            (
                "[System: be brief]\n\nu1\n\n[Assistant: a1]\n\n",
                "nothing new",
            ),
            ("u2", "a new message only"),
        ];
        for (text, what) in cases {
            let mut s = Session::default();
            let mut obs = Observation::default();
            s.begin(&user(t1), true, true);
            answered(&mut obs, "a1");
            s.result(&obs);
            assert_eq!(s.input(&user(text)), Line::Pass, "{what}");
        }
        // The same session cuts the exact re-send.
        let mut s = Session::default();
        let mut obs = Observation::default();
        s.begin(&user(t1), true, true);
        answered(&mut obs, "a1");
        s.result(&obs);
        assert!(matches!(s.input(&user(&resend(t1))), Line::Cut(_)));
    }

    #[test]
    fn any_doubt_ends_the_cutting() {
        let t1 = "[System: s]\n\nu1";
        let t2 = "[System: s]\n\nu1\n\n[Assistant: a1]\n\nu2";
        let run = |setup: &dyn Fn(&mut Session, &mut Observation)| -> Line {
            let mut s = Session::default();
            let mut obs = Observation::default();
            s.begin(&user(t1), true, true);
            setup(&mut s, &mut obs);
            s.input(&user(t2))
        };
        type Setup<'a> = &'a dyn Fn(&mut Session, &mut Observation);
        let cases: &[(&str, Setup)] = &[
            ("no result yet", &|_, _| {}),
            ("an error result", &|s, o| {
                answered(o, "a1");
                o.result.as_mut().unwrap().is_error = true;
                s.result(o)
            }),
            ("a tool call in the turn", &|s, o| {
                o.assistant_tools += 1;
                answered(o, "a1");
                s.result(o)
            }),
            ("two texts in the turn", &|s, o| {
                o.assistant_texts.push("let me see".into());
                answered(o, "a1");
                s.result(o)
            }),
            ("a compaction", &|s, o| {
                o.compactions += 1;
                answered(o, "a1");
                s.result(o)
            }),
            ("a result not the text", &|s, o| {
                answered(o, "a1");
                o.assistant_texts.last_mut().unwrap().push('!');
                s.result(o)
            }),
            ("a second message before the result", &|s, o| {
                s.input(&user("u1b"));
                answered(o, "a1");
                s.result(o)
            }),
            ("an image in the next message", &|s, o| {
                answered(o, "a1");
                s.result(o);
                let image = br#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}}]}}"#;
                s.input(image);
            }),
        ];
        for (what, setup) in cases {
            assert_eq!(run(*setup), Line::Pass, "{what}");
        }
        // Not armed, or the first message came with others: nothing is cut.
        for (alone, armed) in [(false, true), (true, false)] {
            let mut s = Session::default();
            let mut obs = Observation::default();
            s.begin(&user(t1), alone, armed);
            answered(&mut obs, "a1");
            s.result(&obs);
            assert_eq!(s.input(&user(t2)), Line::Pass);
        }
        // Two text blocks are not one text.
        let two = br#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(message_text(two), None);
    }

    #[test]
    fn a_message_not_cut_is_still_held_for_the_next() {
        // Turn 2 holds another reply than the session's (it passes whole);
        // turn 3 re-sends turn 2 as the session holds it.
        let mut s = Session::default();
        let mut obs = Observation::default();
        s.begin(&user("u1"), true, true);
        answered(&mut obs, "a1");
        s.result(&obs);
        let t2 = "u1\n\nAssistant: a1 edited\n\nu2";
        assert_eq!(s.input(&user(t2)), Line::Pass);
        answered(&mut obs, "a2");
        s.result(&obs);
        let t3 = format!("{t2}\n\nAssistant: a2\n\nu3");
        assert_eq!(cut_text(&s.input(&user(&t3))).as_deref(), Some("u3"));
    }
}
