//! A generic recogniser for shapes no specific dialect knows: role markers
//! at line starts (`[User]`, `### user`, `**User:**`, `AI:`, …) whose
//! punctuation "shell" is the same for both roles and that alternate
//! user/assistant consistently, ending with the user. Proof of receipt still
//! guards every resume, so a wrong split only costs a fresh turn.

use super::conversation::{lf, Conversation, Dialect};
use crate::identity::{Role, Turn};

pub struct Generic;

pub static GENERIC: Generic = Generic;

const USER_WORDS: &[&str] = &["user", "human", "me"];
const ASSISTANT_WORDS: &[&str] = &["assistant", "ai", "claude", "model", "bot"];

/// A marker line: its role, the shell around the role word, the rest.
#[derive(Debug, PartialEq)]
struct Marker<'a> {
    role: Role,
    shell: (String, String),
    rest: &'a str,
}

fn is_shell_char(c: char) -> bool {
    matches!(
        c,
        '#' | '*' | '[' | ']' | '<' | '>' | '(' | ')' | '_' | ':' | '-' | '=' | ' '
    )
}

fn marker(line: &str) -> Option<Marker<'_>> {
    let lead_len = line.find(|c: char| !is_shell_char(c))?;
    let lead = &line[..lead_len];
    let after = &line[lead_len..];
    let word_len = after
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(after.len());
    let word = after[..word_len].to_ascii_lowercase();
    let role = if USER_WORDS.contains(&word.as_str()) {
        Role::User
    } else if ASSISTANT_WORDS.contains(&word.as_str()) {
        Role::Assistant
    } else {
        return None;
    };
    let tail = &after[word_len..];
    let trail_len = tail.find(|c: char| !is_shell_char(c)).unwrap_or(tail.len());
    let trail = tail[..trail_len].trim_end();
    // Plain prose ("User said …") has no shell; a marker needs punctuation,
    // and a heading-style marker (`### user`) must be alone on its line.
    let punctuated =
        trail.contains([':', ']', '>', ')', '*']) || lead.contains(['#', '[', '<', '*']);
    let alone = tail[trail_len..].trim().is_empty();
    if !punctuated || (!trail.contains([':', ']', '>', ')', '*']) && !alone) {
        return None;
    }
    Some(Marker {
        role,
        shell: (lead.trim().to_owned(), trail.to_owned()),
        rest: tail[trail_len..].trim(),
    })
}

/// `body` without the `</user>` (or `</assistant>`, …) that closes it, as
/// an xml-ish transcript writes: `<user>q</user>`.
fn without_closing_tag(body: &str, role: Role) -> &str {
    let words = match role {
        Role::User => USER_WORDS,
        Role::Assistant => ASSISTANT_WORDS,
    };
    let Some(open) = body.strip_suffix('>').and_then(|b| b.rfind("</")) else {
        return body;
    };
    let name = body[open + 2..body.len() - 1].to_ascii_lowercase();
    match words.contains(&name.as_str()) {
        true => &body[..open],
        false => body,
    }
}

impl Dialect for Generic {
    fn name(&self) -> &'static str {
        "generic"
    }

    fn parse(&self, text: &str) -> Option<Conversation> {
        let text = lf(text);
        let lines: Vec<&str> = text.split('\n').collect();
        let markers: Vec<(usize, Marker)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((i, marker(l)?)))
            .collect();
        // The shell of the first user marker decides; both roles must use it.
        let shell = markers
            .iter()
            .find(|(_, m)| m.role == Role::User)?
            .1
            .shell
            .clone();
        let turns: Vec<&(usize, Marker)> =
            markers.iter().filter(|(_, m)| m.shell == shell).collect();
        // Without an assistant marker only a prompt that opens with its one
        // user marker counts: a first turn, whose chain the next turn matches.
        let opens_with_user = lines[..turns[0].0].iter().all(|l| l.trim().is_empty());
        let has_assistant = turns.iter().any(|(_, m)| m.role == Role::Assistant);
        let first_turn = opens_with_user && turns.len() == 1;
        if !(has_assistant || first_turn) {
            return None;
        }
        let mut parsed: Vec<Turn> = Vec::new();
        for (k, (i, m)) in turns.iter().enumerate() {
            let end = turns.get(k + 1).map_or(lines.len(), |(j, _)| *j);
            let mut body = m.rest.to_owned();
            for l in &lines[i + 1..end] {
                body.push('\n');
                body.push_str(l);
            }
            let body = body.trim();
            parsed.push(Turn {
                role: m.role,
                text: without_closing_tag(body, m.role).trim().to_owned(),
            });
        }
        let preamble = lines[..turns[0].0].join("\n").trim().to_owned();
        let mut suffix = None;
        if parsed
            .last()
            .is_some_and(|t| t.role == Role::Assistant && t.text.is_empty())
        {
            parsed.pop();
            suffix = Some("assistant cue".to_owned());
        }
        let current = parsed.pop().filter(|t| t.role == Role::User)?;
        let preamble = (!preamble.is_empty()).then_some(preamble);
        let mut c = Conversation::new(self.name(), preamble, parsed, current.text);
        c.suffix = suffix;
        c.alternates().then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_seen_in_the_wild() {
        let cases = [
            "[User]\nu1\n[Assistant]\na1\n[User]\nu2",
            "### user\nu1\n\n### assistant\na1\n\n### user\nu2",
            "**User:** u1\n\n**Assistant:** a1\n\n**User:** u2",
            "Me: u1\nAI: a1\nMe: u2",
            "<user>\nu1\n<assistant>\na1\n<user>\nu2",
            "<user>u1</user>\n<assistant>a1</assistant>\n<user>u2</user>",
            "<user>\nu1\n</user>\n<assistant>\na1\n</assistant>\n<user>\nu2\n</user>",
        ];
        for p in cases {
            let c = GENERIC.parse(p).unwrap_or_else(|| panic!("{p:?}"));
            assert_eq!(c.prior_user_turns().collect::<Vec<_>>(), ["u1"], "{p:?}");
            assert_eq!(c.last_assistant(), Some("a1"), "{p:?}");
            assert_eq!(c.current, "u2", "{p:?}");
        }
    }

    #[test]
    fn refuses_prose_and_mixed_shells() {
        for bad in [
            "User said hello\nAssistant replied",
            "plain text",
            "[User]\nu1\n**Assistant:** a1\n[User]\nu2",
            "[User]\nu1\n[User]\nu2",
            "[User]\nu1\n[Assistant]\na1",
        ] {
            assert_eq!(GENERIC.parse(bad), None, "{bad:?}");
        }
        // A closing tag that is no role's stays in the text.
        let c = GENERIC
            .parse("<user>u1</b>\n<assistant>a1</assistant>\n<user>u2</user>")
            .unwrap();
        assert_eq!(c.prior[0].text, "u1</b>");
        let first = GENERIC.parse("[User]\nfirst question").unwrap();
        assert_eq!(
            (first.has_history(), first.current.as_str()),
            (false, "first question")
        );
        assert_eq!(GENERIC.parse("Intro\n[User]\nfirst question"), None);
        let c = GENERIC
            .parse("Intro\n[User]\nu1\n[Assistant]\na1\n[User]\nu2\n[Assistant]")
            .unwrap();
        assert_eq!(c.preamble.as_deref(), Some("Intro"));
        assert!(c.suffix.is_some());
    }
}
