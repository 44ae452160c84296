//! Stage 1, understand: the caller's prompt as a conversation — earlier
//! turns, the new message, the preamble — in whichever dialect it is
//! written. A prompt no dialect fits is a first turn, never an error.

use crate::dialect::{self, Conversation, Detection};
use crate::env;
use crate::prompt::Prompt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Understood {
    pub conv: Conversation,
    /// Why no dialect fits, when none does (the conversation is then the
    /// whole prompt as one first message).
    pub unrecognised: Option<String>,
}

/// What the prompt says, or `None` when the shim cannot act on it (not
/// text, or several stream-json lines that are not a conversation).
pub fn understand(prompt: &Prompt) -> Option<Understood> {
    if let Prompt::StreamJson { line, more, .. } = prompt {
        if !more.is_empty() {
            let lines: Vec<&[u8]> = std::iter::once(line)
                .chain(more)
                .map(Vec::as_slice)
                .collect();
            let messages = crate::prompt::user_line_messages(&lines)?;
            let conv = dialect::json::parse_messages("stream-lines", &messages, None)?;
            return Some(Understood {
                conv,
                unrecognised: None,
            });
        }
    }
    let text = prompt.text()?;
    Some(match dialect::detect(&text, env::dialect().as_deref()) {
        Detection::Recognised(conv) => Understood {
            conv,
            unrecognised: None,
        },
        Detection::Unrecognised(why) => Understood {
            conv: Conversation::first_turn(&text),
            unrecognised: Some(why),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcripts_first_turns_and_unreadable_prompts() {
        let p = |t: &str| Prompt::Positional {
            index: 1,
            text: t.into(),
        };
        let u = understand(&p("Human: a\n\nAssistant: b\n\nHuman: c")).unwrap();
        assert_eq!(
            (u.conv.dialect, u.conv.current.as_str()),
            ("human-assistant", "c")
        );
        assert_eq!(u.unrecognised, None);
        let u = understand(&p("just a question")).unwrap();
        assert!(!u.conv.has_history() && u.unrecognised.is_some());
        assert_eq!(u.conv.current, "just a question");
        let binary = Prompt::Stdin {
            bytes: vec![0xff, 0xfe].into(),
        };
        assert_eq!(understand(&binary), None);
    }
}
