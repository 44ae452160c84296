//! Role marks learned from a prompt's structure (issue 39): marks that look
//! like words on their own, which only their places show to be marks.

/// Marks that open a message a client wraps (`[User: q]`, `"q"`).
pub(super) const OPENERS: &[char] = &['[', '(', '{', '"', '\'', '«', '“', '‘', '`'];

/// Role marks that look like words on their own (`u q`, `a r`, `me q`),
/// learned from the prompt's structure: the reply the shim captured stands
/// on a line after such a mark, and the lines up to it that begin with it or
/// with one other mark alternate — the other first, one of each per earlier
/// turn. They count only for a client that marks a message once it is
/// history (`q` at turn 1, `u q` at turn 2): the message before the reply
/// must have gained the user's mark. A word put before an earlier message is
/// not taken for one: the two marks are drawn alike ([`same_shape`]).
/// (At turn 2 an edit that puts a word of the mark's shape before the
/// message, `i please…` beside `a reply`, would pass for the mark.)
#[derive(Debug)]
pub(super) struct Marks {
    /// `u ` (with its space), or the few marks that could be it.
    pub(super) users: Vec<String>,
    /// `a `.
    assistant: String,
}

/// At most this many characters in a learned mark.
const MARK_CHARS: usize = 3;

impl Marks {
    /// The marks of `before` (the prompt up to the reply), `turns` the
    /// earlier run's user turns, when its structure shows them.
    pub(super) fn learned(before: &str, turns: usize) -> Option<Marks> {
        let reply_line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        let assistant = mark_of(reply_line).filter(|m| m.len() == reply_line.len())?;
        let history = &before[..before.len() - reply_line.len()];
        // Each line's mark, where it is one of the two, in order.
        let marks: Vec<&str> = history
            .split('\n')
            .filter_map(|line| mark_of(line).filter(|m| m.len() < line.len()))
            .collect();
        // The user's mark: the one other mark that alternates with it.
        let alternates = |user: &str| {
            let ours: Vec<&str> = marks
                .iter()
                .copied()
                .filter(|m| *m == assistant || *m == user)
                .chain([assistant])
                .collect();
            ours.len() == 2 * turns && ours.chunks(2).all(|pair| pair == [user, assistant])
        };
        // (At turn 2 a first word of the preamble may alternate too: each
        // is a candidate, and the label the message gets must be one.)
        let mut users: Vec<String> = Vec::new();
        for m in marks
            .iter()
            .copied()
            .filter(|m| *m != assistant && same_shape(m, assistant))
        {
            if !users.iter().any(|u| u == m) && alternates(m) {
                users.push(m.to_owned());
            }
        }
        (!users.is_empty()).then(|| Marks {
            users,
            assistant: assistant.to_owned(),
        })
    }

    /// Whether `glue` before a reply ends with the assistant's mark on a
    /// line of its own.
    pub(super) fn labels_reply(&self, glue: &str) -> bool {
        let line = &glue[glue.rfind('\n').map_or(0, |i| i + 1)..];
        line == self.assistant && (glue.len() == line.len() || glue.contains('\n'))
    }
}

/// Whether two marks are drawn alike, as a client draws its two roles' (`u`
/// and `a`, `me` and `ai`, `›` and `●`): as many characters, each of the
/// same kind. A word put before a message at turn 2 (`so please…` beside
/// `a reply`) is not taken for a mark.
fn same_shape(a: &str, b: &str) -> bool {
    let kind = |c: char| match c {
        c if c.is_lowercase() => 0,
        c if c.is_uppercase() => 1,
        c if c.is_numeric() => 2,
        _ => 3,
    };
    a.chars().count() == b.chars().count()
        && a.chars().zip(b.chars()).all(|(x, y)| kind(x) == kind(y))
}

/// A line's mark: after the marks that open a wrapped message (`[`), up to
/// [`MARK_CHARS`] characters without blanks, then one space (`u `, `me `,
/// `[a `, `›`'s kin included).
fn mark_of(line: &str) -> Option<&str> {
    let word_at = line.len() - line.trim_start_matches(OPENERS).len();
    let end = word_at + line[word_at..].find(' ')?;
    let word = &line[word_at..end];
    let n = word.chars().count();
    ((1..=MARK_CHARS).contains(&n) && !word.contains(char::is_whitespace)).then(|| &line[..end + 1])
}
