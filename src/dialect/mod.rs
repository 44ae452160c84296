//! Dialects: how clients render a replayed conversation into one prompt.
//! Each dialect parses a prompt into a `Conversation`; `detect` picks the one
//! that fits, and anything ambiguous or unknown is treated as a first turn
//! (run fresh with the whole prompt — never an error).

mod conversation;
mod generic;
pub mod json;
mod labels;
mod markdown;
mod xml;

pub use conversation::{Continued, Conversation, Dialect};
// A turn is what a chain is made of: defined with the chain.
pub use crate::identity::{Role, Turn};

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
