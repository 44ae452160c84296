//! Markdown headings inside an instructions wrapper (Open Design daemon):
//! `# Instructions (read first)⏎⏎…⏎⏎---⏎# User request⏎⏎` then turns as
//! `## user⏎<body>` / `## assistant⏎<body>` joined by blank lines. A body line
//! that would read as a heading is escaped with a leading `\`. Everything
//! before the first `## user` (instructions, a context warning) is the
//! preamble; it is recomposed every turn and may change.

use super::conversation::{lf, Conversation, Dialect};
use crate::identity::{Role, Turn};

pub struct Markdown;

pub static MARKDOWN: Markdown = Markdown;

fn heading(line: &str) -> Option<Role> {
    match line.trim_end() {
        "## user" => Some(Role::User),
        "## assistant" => Some(Role::Assistant),
        _ => None,
    }
}

/// Undo the client's escaping of heading-like lines inside a body.
fn unescape(body: &str) -> String {
    body.split('\n')
        .map(|l| match l.strip_prefix('\\') {
            Some(rest) if heading(rest).is_some() => rest,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Dialect for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn parse(&self, text: &str) -> Option<Conversation> {
        // Cheap refusal before any copy.
        if !text.contains("## user") {
            return None;
        }
        let text = lf(text);
        let mut preamble = String::new();
        let mut turns: Vec<(Role, String)> = Vec::new();
        for line in text.split('\n') {
            match heading(line) {
                Some(role) => turns.push((role, String::new())),
                None => match turns.last_mut() {
                    Some((_, body)) => {
                        body.push_str(line);
                        body.push('\n');
                    }
                    None => {
                        preamble.push_str(line);
                        preamble.push('\n');
                    }
                },
            }
        }
        let (Role::User, current) = turns.pop()? else {
            return None;
        };
        let prior: Vec<Turn> = turns
            .into_iter()
            .map(|(role, body)| Turn {
                role,
                text: body.trim().to_owned(),
            })
            .collect();
        let preamble = preamble.trim();
        let preamble = (!preamble.is_empty()).then(|| preamble.to_owned());
        let current = current.trim().to_owned();
        let mut c = Conversation::new(self.name(), preamble.clone(), prior, current.clone());
        if !c.alternates() {
            return None;
        }
        c.delta = unescape(&current);
        c.delta_with_preamble = match preamble {
            Some(p) => format!("{p}\n\n## user\n{current}"),
            None => format!("## user\n{current}"),
        };
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYLOAD: &str = "# Instructions (read first)\n\nBe a designer.\n\n---\n\nUse tokens.\n\n---\n# User request\n\n## user\nmake a page\n\n## assistant\nHere it is.\n\\## user\nnot a turn\n\n## user\nmake it blue";

    #[test]
    fn parses_instructions_and_escaped_headings() {
        let c = MARKDOWN.parse(PAYLOAD).unwrap();
        assert!(c
            .preamble
            .as_deref()
            .unwrap()
            .starts_with("# Instructions (read first)"));
        assert!(c.preamble.as_deref().unwrap().ends_with("# User request"));
        assert_eq!(c.prior_user_turns().collect::<Vec<_>>(), ["make a page"]);
        assert_eq!(
            c.last_assistant(),
            Some("Here it is.\n\\## user\nnot a turn")
        );
        assert_eq!(c.current, "make it blue");
        assert_eq!(c.delta, "make it blue");
        assert!(c
            .delta_with_preamble
            .ends_with("# User request\n\n## user\nmake it blue"));
    }

    #[test]
    fn first_turn_and_refusals() {
        let c = MARKDOWN
            .parse("# Instructions\n\nx\n\n---\n# User request\n\n## user\nhi")
            .unwrap();
        assert!(!c.has_history());
        assert_eq!(c.current, "hi");
        assert_eq!(MARKDOWN.parse("no headings"), None);
        assert_eq!(MARKDOWN.parse("## user\na\n\n## assistant\nb"), None);
        assert_eq!(MARKDOWN.parse("## user\na\n\n## user\nb"), None);
        assert_eq!(unescape("\\## assistant\n\\# x"), "## assistant\n\\# x");
    }
}
