//! XML-ish wrappers (claude-max-api-proxy and forks): an optional
//! `<system>⏎sys⏎</system>` block, user text bare, each assistant reply as
//! `<previous_response>⏎a⏎</previous_response>`, joined by newlines.

use super::conversation::{lf, Conversation, Dialect};
use crate::identity::{Role, Turn};

pub struct Xml;

pub static XML: Xml = Xml;

const OPEN: &str = "<previous_response>";
const CLOSE: &str = "</previous_response>";

impl Dialect for Xml {
    fn name(&self) -> &'static str {
        "xml"
    }

    fn parse(&self, text: &str) -> Option<Conversation> {
        // Cheap refusal before any copy.
        if !text.contains(OPEN) && !text.trim_start().starts_with("<system>") {
            return None;
        }
        let text = lf(text);
        let mut rest = text.trim();
        let mut preamble = None;
        if rest.starts_with("<system>\n") {
            let end = rest.find("\n</system>")? + "\n</system>".len();
            preamble = Some(rest[..end].to_owned());
            rest = rest[end..].trim_start_matches('\n');
        }
        let mut prior = Vec::new();
        let mut user = String::new();
        let mut reply: Option<String> = None;
        for line in rest.split('\n') {
            match (&mut reply, line.trim_end()) {
                (None, OPEN) => {
                    prior.push(Turn {
                        role: Role::User,
                        text: user.trim().to_owned(),
                    });
                    user.clear();
                    reply = Some(String::new());
                }
                (Some(body), CLOSE) => {
                    prior.push(Turn {
                        role: Role::Assistant,
                        text: body.trim().to_owned(),
                    });
                    reply = None;
                }
                (Some(body), _) => {
                    body.push_str(line);
                    body.push('\n');
                }
                (None, _) => {
                    user.push_str(line);
                    user.push('\n');
                }
            }
        }
        let current = user.trim().to_owned();
        // Unclosed reply, no marker at all, or an empty user turn: not ours.
        if reply.is_some() || (prior.is_empty() && preamble.is_none()) || current.is_empty() {
            return None;
        }
        if prior
            .iter()
            .any(|t| t.role == Role::User && t.text.is_empty())
        {
            return None;
        }
        let c = Conversation::new(self.name(), preamble, prior, current);
        c.alternates().then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_system_and_previous_responses() {
        let p = "<system>\nbe terse\n</system>\n\nu1\n<previous_response>\na1\nmore\n</previous_response>\n\nu2 line\nsecond line";
        let c = XML.parse(p).unwrap();
        assert_eq!(c.preamble.as_deref(), Some("<system>\nbe terse\n</system>"));
        assert_eq!(c.prior_user_turns().collect::<Vec<_>>(), ["u1"]);
        assert_eq!(c.last_assistant(), Some("a1\nmore"));
        assert_eq!(c.current, "u2 line\nsecond line");
        assert_eq!(
            c.delta_with_preamble,
            "<system>\nbe terse\n</system>\n\nu2 line\nsecond line"
        );
        let first = XML.parse("<system>\nbe terse\n</system>\nhello").unwrap();
        assert_eq!(
            (first.has_history(), first.current.as_str()),
            (false, "hello")
        );
    }

    #[test]
    fn refuses_other_shapes() {
        for bad in [
            "plain question",
            "u1\n<previous_response>\na1",
            "<previous_response>\na1\n</previous_response>\nu2",
            "u1\n<previous_response>\na1\n</previous_response>",
        ] {
            assert_eq!(XML.parse(bad), None, "{bad:?}");
        }
    }
}
