//! A prompt, understood: the `Conversation` every dialect reads a prompt
//! into (and `Continued`, the earlier run one continues by content), the
//! `Dialect` trait each dialect implements, and `lf`, the line-end
//! normalising every dialect parses through.

use crate::identity::{Role, Turn};

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

/// `text` with CRLF line ends as LF; borrowed (no copy) when it has no CR,
/// as nearly every prompt has not: each dialect parses the whole prompt.
pub(super) fn lf(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}
