//! Dialects: how clients render a replayed conversation into one prompt.
//! Each dialect parses a prompt into a `Conversation`; `detect` picks the one
//! that fits, and anything ambiguous or unknown is treated as a first turn
//! (run fresh with the whole prompt — never an error).

mod generic;
pub mod json;
mod labels;
mod markdown;
mod xml;

// A turn is what a chain is made of: defined with the chain.
pub use crate::identity::{Role, Turn};

/// A prompt, understood: instructions, earlier turns (alternating, starting
/// with the user), the new user message, and a trailing cue if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    pub dialect: &'static str,
    pub preamble: Option<String>,
    pub prior: Vec<Turn>,
    /// The new user message, as hashed into the chain.
    pub current: String,
    pub suffix: Option<String>,
    /// What a resumed turn sends instead of the whole prompt, in the
    /// dialect's own shape: without and with the preamble.
    pub delta: String,
    pub delta_with_preamble: String,
    /// Set when no dialect read the prompt but it continues an earlier run
    /// by content: `prior` then holds only that run's reply as replayed.
    pub continued: Option<Box<Continued>>,
}

/// The earlier run a prompt continues by content (see `crate::continuation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continued {
    /// The pin of that run.
    pub pin: i64,
    /// That pin's chain: what this turn's chain extends.
    pub chain: crate::identity::Chain,
    /// User turns up to that run.
    pub turns: usize,
    /// The session that run's pin points to.
    pub session: String,
    pub conv_key: Option<crate::identity::ConvKey>,
}

impl Conversation {
    /// A conversation whose delta is the bare current message.
    pub fn new(
        dialect: &'static str,
        preamble: Option<String>,
        prior: Vec<Turn>,
        current: String,
    ) -> Conversation {
        let delta_with_preamble = match &preamble {
            Some(p) => format!("{p}\n\n{current}"),
            None => current.clone(),
        };
        Conversation {
            dialect,
            preamble,
            prior,
            delta: current.clone(),
            current,
            suffix: None,
            delta_with_preamble,
            continued: None,
        }
    }

    /// The part of `prompt` after an earlier run's `reply` that continues it.
    pub fn continuing(continued: Continued, reply: &str, delta: &str) -> Conversation {
        let mut c = Conversation::new(
            "content",
            None,
            vec![Turn {
                role: Role::Assistant,
                text: reply.to_owned(),
            }],
            delta.to_owned(),
        );
        c.continued = Some(Box::new(continued));
        c
    }

    /// How the conversation was recognised, for people: a dialect's name,
    /// or the run it continues.
    pub fn rule(&self) -> String {
        match &self.continued {
            Some(c) => format!(
                "continues run {} by content, turn {} of session {}",
                c.pin,
                c.turns,
                c.session.get(..8).unwrap_or(&c.session)
            ),
            None => format!("dialect {}", self.dialect),
        }
    }

    /// A prompt with no history: the whole text is the user message.
    pub fn first_turn(text: &str) -> Conversation {
        Conversation::new("none", None, Vec::new(), text.to_owned())
    }

    pub fn has_history(&self) -> bool {
        !self.prior.is_empty()
    }

    /// Earlier user turns, in order.
    pub fn prior_user_turns(&self) -> impl Iterator<Item = &str> {
        self.prior
            .iter()
            .filter(|t| t.role == Role::User)
            .map(|t| t.text.as_str())
    }

    /// The reply the caller says it received last.
    pub fn last_assistant(&self) -> Option<&str> {
        self.prior
            .iter()
            .rev()
            .find(|t| t.role == Role::Assistant)
            .map(|t| t.text.as_str())
    }

    /// True when turns alternate user, assistant, …, starting with the user.
    pub fn alternates(&self) -> bool {
        self.prior.iter().enumerate().all(|(i, t)| {
            t.role
                == if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                }
        }) && self.prior.len() % 2 == 0
    }
}

/// A way of rendering history.
pub trait Dialect: Sync {
    fn name(&self) -> &'static str;
    /// `Some` only when the whole prompt fits this dialect's shape and holds
    /// at least one role marker.
    fn parse(&self, text: &str) -> Option<Conversation>;
    /// Whether the text fits this dialect but ends with a reply: a saved
    /// transcript, with no new user message to send.
    fn ends_with_reply(&self, _text: &str) -> bool {
        false
    }
}

/// Specific dialects, tried together; a prompt that fits two of them
/// differently is ambiguous and runs fresh.
static DIALECTS: &[&dyn Dialect] = &[
    &labels::HUMAN,
    &labels::USER,
    &markdown::MARKDOWN,
    &xml::XML,
    &json::JSON,
];

/// Tried only when no specific dialect fits.
static FALLBACK: &dyn Dialect = &generic::GENERIC;

pub fn names() -> impl Iterator<Item = &'static str> {
    DIALECTS.iter().chain([&FALLBACK]).map(|d| d.name())
}

/// What `detect` concluded, with the reason when nothing fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detection {
    Recognised(Conversation),
    /// No dialect fits: a first turn, or a shape we do not know.
    Unrecognised(String),
}

impl Detection {
    /// The conversation to act on: a fallback to "whole prompt is one user
    /// message" when nothing fits.
    pub fn conversation(&self, text: &str) -> Conversation {
        match self {
            Detection::Recognised(c) => c.clone(),
            Detection::Unrecognised(_) => Conversation::first_turn(text),
        }
    }
}

/// Find the dialect of `text`, or use the forced one.
pub fn detect(text: &str, forced: Option<&str>) -> Detection {
    if let Some(name) = forced {
        let all = || DIALECTS.iter().chain([&FALLBACK]);
        return match all().find(|d| d.name() == name) {
            Some(d) => match d.parse(text) {
                Some(c) => Detection::Recognised(c),
                None => Detection::Unrecognised(format!(
                    "the prompt does not fit the forced dialect {name}"
                )),
            },
            None => Detection::Unrecognised(format!(
                "unknown dialect {name} (known: {})",
                names().collect::<Vec<_>>().join(", ")
            )),
        };
    }
    let mut fits: Vec<Conversation> = DIALECTS.iter().filter_map(|d| d.parse(text)).collect();
    if fits.is_empty() {
        fits.extend(FALLBACK.parse(text));
    }
    if fits.windows(2).any(|w| !same_turns(&w[0], &w[1])) {
        return Detection::Unrecognised(format!(
            "ambiguous: fits {} differently",
            fits.iter()
                .map(|c| c.dialect)
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    }
    match fits.into_iter().next() {
        Some(c) => Detection::Recognised(c),
        None => match DIALECTS
            .iter()
            .chain([&FALLBACK])
            .find(|d| d.ends_with_reply(text))
        {
            Some(d) => Detection::Unrecognised(format!(
                "a {} transcript that ends with a reply: no new user message to send",
                d.name()
            )),
            None => Detection::Unrecognised("no role markers of a known dialect".into()),
        },
    }
}

/// `text` with CRLF line ends as LF; borrowed (no copy) when it has no CR,
/// as nearly every prompt has not: each dialect parses the whole prompt.
fn lf(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

fn same_turns(a: &Conversation, b: &Conversation) -> bool {
    a.prior == b.prior && a.current == b.current && a.preamble == b.preamble
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_picks_the_family_or_refuses() {
        let human = "Human: hi\n\nAssistant: yo\n\nHuman: more";
        let Detection::Recognised(c) = detect(human, None) else {
            panic!()
        };
        assert_eq!(c.dialect, "human-assistant");
        let user = "User: hi\n\nAssistant: yo\n\nUser: more";
        let Detection::Recognised(c) = detect(user, None) else {
            panic!()
        };
        assert_eq!(c.dialect, "user-assistant");
        assert!(matches!(
            detect("just a question", None),
            Detection::Unrecognised(_)
        ));
        assert!(matches!(
            detect(human, Some("user-assistant")),
            Detection::Unrecognised(_)
        ));
        assert!(matches!(
            detect(human, Some("nope")),
            Detection::Unrecognised(_)
        ));
        // Families mixed: no specific dialect fits; the generic one reads
        // both user labels as the user (proof of receipt still guards).
        let mixed = "Human: a\n\nAssistant: b\n\nUser: c";
        let Detection::Recognised(c) = detect(mixed, None) else {
            panic!()
        };
        assert_eq!(c.dialect, "generic");
        // A saved transcript is told apart from an unknown shape.
        let Detection::Unrecognised(why) = detect("Human: a\n\nAssistant: b", None) else {
            panic!()
        };
        assert!(why.contains("ends with a reply"), "{why}");
        let Detection::Unrecognised(why) = detect(
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#,
            None,
        ) else {
            panic!()
        };
        assert!(
            why.contains("json transcript that ends with a reply"),
            "{why}"
        );
        // Each specific dialect is found by detect.
        for (text, name) in [
            ("## user\na\n\n## assistant\nb\n\n## user\nc", "markdown"),
            ("a\n<previous_response>\nb\n</previous_response>\nc", "xml"),
            (r#"[{"role":"user","content":"a"}]"#, "json"),
            ("[User]\na\n[Assistant]\nb\n[User]\nc", "generic"),
        ] {
            let Detection::Recognised(c) = detect(text, None) else {
                panic!("{text}")
            };
            assert_eq!(c.dialect, name);
        }
    }
}
