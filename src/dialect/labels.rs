//! The label families: `Human:`/`Assistant:` and `User:`/`Assistant:` role
//! markers at line starts, turns joined by one or two newlines, an optional
//! preamble before the first marker (e.g. `System: …`) and an optional bare
//! `Assistant:` cue at the end.

use super::conversation::{lf, Conversation, Dialect};
use crate::identity::{Role, Turn};
use std::borrow::Cow;
use std::ops::Range;

pub struct Labels {
    name: &'static str,
    user: &'static str,
    assistant: &'static str,
}

pub static HUMAN: Labels = Labels {
    name: "human-assistant",
    user: "Human:",
    assistant: "Assistant:",
};
pub static USER: Labels = Labels {
    name: "user-assistant",
    user: "User:",
    assistant: "Assistant:",
};

impl Labels {
    /// The role a line opens, and the rest of the line after the marker.
    fn marker<'a>(&self, line: &'a str) -> Option<(Role, &'a str)> {
        let rest = |label: &str| {
            let rest = line.strip_prefix(label)?;
            // `Human:x` is not a marker; `Human:` alone or `Human: x` is.
            (rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'))
                .then(|| rest.trim_start())
        };
        rest(self.user)
            .map(|r| (Role::User, r))
            .or_else(|| rest(self.assistant).map(|r| (Role::Assistant, r)))
    }
}

/// A turn as split: its role, and its body's span in the text (from after
/// the marker to the end of its last line). Spans, not copies: a replayed
/// 1 MiB transcript is split on every turn.
type Split = (Role, Range<usize>);

/// A prompt split into turns: the text (CRLF made LF), where the preamble
/// ends, and the alternating turns.
struct Splits<'t> {
    text: Cow<'t, str>,
    preamble_end: usize,
    turns: Vec<Split>,
}

impl Splits<'_> {
    fn body(&self, (_, span): &Split) -> &str {
        &self.text[span.clone()]
    }
}

impl Labels {
    /// The preamble and the alternating turns.
    fn turns<'t>(&self, text: &'t str) -> Option<Splits<'t>> {
        // Cheap refusal before any copy: no user marker at a line start.
        if !text.starts_with(self.user) && !text.contains(&format!("\n{}", self.user)) {
            return None;
        }
        let text = lf(text);
        let mut preamble_end = 0;
        let mut turns: Vec<Split> = Vec::new();
        let mut at = 0;
        for line in text.split('\n') {
            let end = at + line.len();
            match self.marker(line) {
                Some((role, rest)) => {
                    if turns.is_empty() {
                        preamble_end = at;
                    }
                    // Two markers of one role in a row cannot both open
                    // turns: a reply (or a pasted user message) held a line
                    // that reads like a marker. The earlier of the two is
                    // content of the turn before it. Proof of receipt still
                    // checks the result against the reply the shim captured.
                    let repeats = turns.last().is_some_and(|(r, _)| *r == role);
                    if repeats && turns.len() >= 2 {
                        if let Some((_, absorbed)) = turns.pop() {
                            if let Some((_, span)) = turns.last_mut() {
                                span.end = absorbed.end;
                            }
                        }
                    }
                    turns.push((role, end - rest.len()..end));
                }
                None => {
                    if let Some((_, span)) = turns.last_mut() {
                        span.end = end;
                    }
                }
            }
            at = end + 1;
        }
        let alternates = turns.iter().enumerate().all(|(i, (role, _))| {
            *role
                == if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                }
        });
        if turns.is_empty() || !alternates {
            return None;
        }
        Some(Splits {
            text,
            preamble_end,
            turns,
        })
    }
}

impl Dialect for Labels {
    fn name(&self) -> &'static str {
        self.name
    }

    fn parse(&self, text: &str) -> Option<Conversation> {
        let mut split = self.turns(text)?;
        // A bare trailing `Assistant:` is a cue for the model, not a turn.
        let mut suffix = None;
        if let Some(last) = split.turns.last() {
            if last.0 == Role::Assistant {
                if !split.body(last).trim().is_empty() {
                    return None;
                }
                suffix = Some(self.assistant.to_owned());
                split.turns.pop();
            }
        }
        let current = split.turns.pop()?;
        let current = split.body(&current).trim().to_owned();
        let prior = split
            .turns
            .iter()
            .map(|t| Turn {
                role: t.0,
                text: split.body(t).trim().to_owned(),
            })
            .collect();
        let preamble = split.text[..split.preamble_end].trim();
        let preamble = (!preamble.is_empty()).then(|| preamble.to_owned());
        let mut c = Conversation::new(self.name, preamble, prior, current);
        c.suffix = suffix;
        Some(c)
    }

    fn ends_with_reply(&self, text: &str) -> bool {
        self.turns(text).is_some_and(|split| {
            split
                .turns
                .last()
                .is_some_and(|t| t.0 == Role::Assistant && !split.body(t).trim().is_empty())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(c: &Conversation) -> Vec<(Role, &str)> {
        c.prior.iter().map(|t| (t.role, t.text.as_str())).collect()
    }

    #[test]
    fn human_family_shapes() {
        use Role::*;
        // openai wrapper: joined by blank lines.
        let c = HUMAN
            .parse("Human: u1\n\nAssistant: a1\nline 2\n\nHuman: u2")
            .unwrap();
        assert_eq!(turns(&c), [(User, "u1"), (Assistant, "a1\nline 2")]);
        assert_eq!(
            (c.current.as_str(), c.preamble, c.suffix),
            ("u2", None, None)
        );
        // relay: System line, single newlines, trailing cue.
        let c = HUMAN
            .parse("System: be brief\nHuman: u1\nAssistant: a1\nHuman: u2\nAssistant:")
            .unwrap();
        assert_eq!(c.preamble.as_deref(), Some("System: be brief"));
        assert_eq!(turns(&c), [(User, "u1"), (Assistant, "a1")]);
        assert_eq!(c.current, "u2");
        assert_eq!(c.suffix.as_deref(), Some("Assistant:"));
        // CRLF and a single message.
        let c = HUMAN.parse("Human: only\r\n").unwrap();
        assert!(c.prior.is_empty());
        assert_eq!(c.current, "only");
    }

    #[test]
    fn a_marker_like_line_inside_a_reply_stays_in_the_reply() {
        let p =
            "Human: u1\nAssistant: reply 1: quoting\nHuman: what you said\nHuman: u2\nAssistant:";
        let c = HUMAN.parse(p).unwrap();
        assert_eq!(c.prior_user_turns().collect::<Vec<_>>(), ["u1"]);
        assert_eq!(
            c.last_assistant(),
            Some("reply 1: quoting\nHuman: what you said")
        );
        assert_eq!(c.current, "u2");
        // …and in a user message.
        let p = "Human: look at this:\nAssistant: pasted\n\nAssistant: a1\n\nHuman: u2";
        let c = HUMAN.parse(p).unwrap();
        assert_eq!(
            c.prior_user_turns().collect::<Vec<_>>(),
            ["look at this:\nAssistant: pasted"]
        );
        assert_eq!(c.last_assistant(), Some("a1"));
    }

    #[test]
    fn refuses_what_does_not_alternate_or_ends_with_a_reply() {
        for bad in [
            "hello",
            "Assistant: a\n\nHuman: b",
            "Human: a\n\nHuman: b",
            "Human: a\n\nAssistant: b",
            "Human:x",
        ] {
            assert_eq!(HUMAN.parse(bad), None, "{bad:?}");
        }
        assert_eq!(USER.parse("Human: a"), None);
    }

    #[test]
    fn user_family() {
        let c = USER.parse("User: u1\n\nAssistant: a1\n\nUser: u2").unwrap();
        assert_eq!(c.prior_user_turns().collect::<Vec<_>>(), ["u1"]);
        assert_eq!(c.last_assistant(), Some("a1"));
        assert_eq!(c.current, "u2");
    }
}
