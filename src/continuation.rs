//! Continuation by content: a prompt that holds what the shim sent earlier
//! and the reply it got, then something new, continues that conversation,
//! whatever labels, separators or wrappers the client draws around them.
//!
//! A client that replays its transcript sends at turn k what it sent at turn
//! k−1, the reply it got, and the new message. Its rendering may differ
//! between the two in known ways, which the match sees through:
//! - a fixed preamble and a fixed suffix ("answer briefly") around the whole
//!   prompt: the common prefix and suffix of the two prompts;
//! - the newest message labelled otherwise once it becomes history (`q` at
//!   turn 1, `[User]: q` at turn 2): a short label before it may change;
//! - a label between that message and the reply (`\n[Assistant]: `).
//!
//! Everything else must be the same bytes. So an edited earlier turn, an
//! edited reply, or an earlier prompt quoted inside new text does not match,
//! and the turn runs as it would without this rule.
//!
//! Pure: the caller brings the earlier prompt and its reply forms.

use aho_corasick::AhoCorasick;
use std::collections::HashSet;
use std::ops::Range;

mod marks;
use marks::{Marks, OPENERS};

/// At most this many bytes of glue between a message and the reply after it.
const GLUE_BYTES: usize = 80;
/// At most this many words in that glue (`--- previous reply ---` has 2,
/// `### The assistant answered:` 3).
const GLUE_WORDS: usize = 6;
/// A label that may change before the newest message once it is history:
/// shorter, and at most this many words (`[User]:`, `Human said:`).
const LABEL_BYTES: usize = 40;
const LABEL_WORDS: usize = 2;
/// How much shorter than an earlier prompt and its reply a prompt that
/// continues them may be (a label dropped).
pub const SLACK: usize = LABEL_BYTES;
/// Occurrences of a reply tried per earlier run (a short reply may occur in
/// the text many times; only one place is right).
const TRIES: usize = 16;

/// An earlier run of this scope: the prompt it was given, its reply forms.
pub struct Earlier<'a> {
    pub prompt: &'a str,
    pub replies: &'a [String],
    /// User turns up to that run: from 2 on, its prompt holds earlier
    /// replies, so the label before a reply must be one it used.
    pub turns: usize,
}

/// How `prompt` continues an earlier run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continues {
    /// Where the earlier run's reply lies in the prompt.
    pub reply: Range<usize>,
    /// What is new: everything after the reply, less the glue that closes it.
    pub delta: Range<usize>,
}

impl Continues {
    pub fn reply_text<'a>(&self, prompt: &'a str) -> &'a str {
        &prompt[self.reply.clone()]
    }

    pub fn delta_text<'a>(&self, prompt: &'a str) -> &'a str {
        &prompt[self.delta.clone()]
    }
}

/// Byte positions in `s` where `needle` starts, in order.
fn occurrences<'a>(s: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    memchr::memmem::find_iter(s.as_bytes(), needle.as_bytes())
        .filter(move |&i| s.is_char_boundary(i) && s.is_char_boundary(i + needle.len()))
}

/// Bytes of a reply the one-pass search looks for; a hit is then checked
/// for the whole reply.
const KEY_BYTES: usize = 32;

/// Which of `replies` occur in `text`, in one pass over it for all of them:
/// an Aho-Corasick automaton over each reply's first bytes, each hit then
/// checked for the whole reply. A turn tries up to 64 kept prompts, and one
/// search per reply was one pass over a 1 MiB prompt each.
pub fn occurring<'r>(text: &str, replies: &[&'r str]) -> HashSet<&'r str> {
    let mut found = HashSet::new();
    let distinct: Vec<&str> = replies
        .iter()
        .copied()
        .filter(|r| !r.is_empty())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut keys: Vec<&str> = Vec::new();
    let mut replies_of_key: Vec<Vec<&str>> = Vec::new();
    for r in &distinct {
        // Never empty: a character is at most 4 bytes.
        let key = &r[..floor(r, KEY_BYTES.min(r.len()))];
        match keys.iter().position(|k| *k == key) {
            Some(i) => replies_of_key[i].push(r),
            None => {
                keys.push(key);
                replies_of_key.push(vec![r]);
            }
        }
    }
    if keys.is_empty() {
        return found;
    }
    let Ok(automaton) = AhoCorasick::new(&keys) else {
        // Too large to build (it is not, at 64 short keys): search each.
        return distinct
            .into_iter()
            .filter(|r| memchr::memmem::find(text.as_bytes(), r.as_bytes()).is_some())
            .collect();
    };
    for hit in automaton.find_overlapping_iter(text) {
        let rest = &text.as_bytes()[hit.start()..];
        for r in &replies_of_key[hit.pattern().as_usize()] {
            if rest.starts_with(r.as_bytes()) {
                found.insert(*r);
            }
        }
        if found.len() == distinct.len() {
            break;
        }
    }
    found
}

/// Whether `prompt` continues `earlier`, and where.
pub fn continues(prompt: &str, earlier: &Earlier<'_>) -> Option<Continues> {
    for reply in earlier.replies {
        let reply = reply.trim();
        if reply.is_empty() {
            continue;
        }
        for at in occurrences(prompt, reply).take(TRIES) {
            let end = at + reply.len();
            let Some(closer) = ends_its_line(&prompt[end..], earlier.prompt, &prompt[..at]) else {
                continue;
            };
            if !aligned(earlier, &prompt[..at], &prompt[end..]) {
                continue;
            }
            let delta = delta_after(prompt, end, closer);
            if prompt[delta.clone()].trim().is_empty() {
                // A transcript that ends with the reply: nothing new to send.
                return None;
            }
            return Some(Continues {
                reply: at..end,
                delta,
            });
        }
    }
    None
}

/// Whether `before` (the prompt up to the reply) is the earlier prompt plus
/// glue, and `after` ends as the earlier prompt did.
fn aligned(e: &Earlier<'_>, before: &str, after: &str) -> bool {
    let earlier = e.prompt;
    // Learned only when a label is not one on its own look (a scan of the
    // prompt's lines, done at most once per place tried).
    let learned = std::cell::OnceCell::new();
    let learned = || {
        learned
            .get_or_init(|| Marks::learned(before, e.turns))
            .as_ref()
    };
    // A learned mark before the reply counts only where the message before
    // it got a learned user mark now that it is history (the shape these
    // marks are learned for): a word put before a reply, beside a message
    // that kept its label, is not the structure (a preamble's first word can
    // look like a mark).
    let label_ok = |glue: &str, relabelled_to: Option<&str>| {
        reply_label_ok(glue, e)
            || learned().is_some_and(|m| {
                m.labels_reply(glue)
                    && relabelled_to.is_some_and(|l| m.users.iter().any(|u| u == l))
            })
    };
    // A label changed once the earlier prompt holds replies must be one the
    // client uses: the new one labels other messages too, or the old one
    // still labels the newest. (Before that, there is only the one message.)
    let count = |label: &str| {
        let n = |s: &str| memchr::memmem::find_iter(s.as_bytes(), label.as_bytes()).count();
        n(before) + n(after)
    };
    let relabel_seen = |old: &str, new: &str| {
        let (old, new) = unwrapped(old, new);
        e.turns < 2 || (!new.is_empty() && count(new) >= 2) || (!old.is_empty() && count(old) >= 1)
    };
    let cp = floor(earlier, common_prefix(earlier, before));
    let cs = common_suffix(earlier, after);
    let cs = earlier.len() - ceil(earlier, earlier.len() - cs);
    // The shared prefix may run into a label the two renderings share the
    // first letters of, and the shared suffix into the message's own ending
    // ("…cats" both times): try them cut back to a line break too.
    let cps = [cp, earlier[..cp].rfind('\n').map_or(0, |i| i + 1)];
    let css = [cs, line_cut_suffix(earlier, cs), 0];
    cps.iter().any(|&cp| {
        let at_line_start = cp == 0 || earlier.as_bytes()[cp - 1] == b'\n';
        css.iter().any(|&cs| {
            let cs = cs.min(earlier.len() - cp);
            // Whatever is shared, the earlier prompt's text must come before
            // the reply, not only after it.
            earlier[..earlier.len() - cs]
                .chars()
                .any(char::is_alphanumeric)
                && matches_with_glue(
                    &earlier[cp..earlier.len() - cs],
                    &before[cp..],
                    at_line_start,
                    &label_ok,
                    &|old: &str, new: &str| {
                        (relabel_ok(old, new, at_line_start) && relabel_seen(old, new))
                            || (at_line_start
                                && (unwrapped(old, new).0.is_empty() || label_shaped(old))
                                && learned().is_some_and(|m| m.users.iter().any(|u| u == new)))
                    },
                )
        })
    })
}

/// `cs` shortened to begin at the first line break within it.
fn line_cut_suffix(earlier: &str, cs: usize) -> usize {
    let tail = &earlier[earlier.len() - cs..];
    match tail.find('\n') {
        Some(i) => cs - i,
        None => 0,
    }
}

/// `a` (what the earlier prompt had between the shared prefix and suffix)
/// against `b` (what the new prompt has between the shared prefix and the
/// reply): the same message, with at most a changed label before it and
/// glue after it.
///
/// Edits must not pass for glue: a label may change only at a line start
/// and must look like one; glue after the message starts on a new line.
fn matches_with_glue(
    a: &str,
    b: &str,
    at_line_start: bool,
    // (the glue before the reply; the message's new label, where it changed)
    label_ok: &dyn Fn(&str, Option<&str>) -> bool,
    relabel: &dyn Fn(&str, &str) -> bool,
) -> bool {
    if a.trim().is_empty() {
        return is_glue(b, GLUE_BYTES, GLUE_WORDS)
            && (at_line_start || starts_a_line(b))
            && label_ok(b, None);
    }
    // `b` = label + message + glue: try every glue length at the end.
    let mut g = 0;
    while g <= b.len().min(GLUE_BYTES) {
        if b.is_char_boundary(b.len() - g) {
            let glue = &b[b.len() - g..];
            if !is_glue(glue, GLUE_BYTES, GLUE_WORDS) {
                break;
            }
            let body = &b[..b.len() - g];
            let c = message_len(a, floor_from_end(a, common_suffix(a, body)));
            let message = &a[a.len() - c..];
            let old_label = &a[..a.len() - c];
            let new_label = &body[..body.len() - c];
            let relabelled = old_label != new_label;
            if message.chars().any(char::is_alphanumeric)
                && starts_a_line(glue)
                && label_ok(glue, relabelled.then_some(new_label))
                && is_glue(old_label, LABEL_BYTES, LABEL_WORDS)
                && is_glue(new_label, LABEL_BYTES, LABEL_WORDS)
                && (!relabelled || relabel(old_label, new_label))
            {
                return true;
            }
        }
        g += 1;
    }
    false
}

/// Whether the glue before a reply ends with a label (`Assistant:`,
/// `--- previous reply ---`, `<assistant>`), not words put before the reply,
/// and, once the earlier prompt holds replies, one it put before them too.
fn reply_label_ok(glue: &str, e: &Earlier<'_>) -> bool {
    let trimmed = glue.trim_end_matches([' ', '\t']);
    let Some(last) = trimmed.trim_end().lines().last() else {
        return true;
    };
    let line = match trimmed.ends_with('\n') {
        true => format!("{last}\n"),
        false => last.to_owned(),
    };
    label_shaped(&line) && (e.turns < 2 || e.prompt.contains(last.trim()))
}

/// Whether what follows a reply ends its line: whitespace, a closing tag, or
/// the closing mark the client puts after every message, up to a line break
/// (an edit that appends to the reply does not). The length of that mark.
/// `before` is the prompt up to the reply.
fn ends_its_line(after: &str, earlier: &str, before: &str) -> Option<usize> {
    let line = after.split('\n').next().unwrap_or("");
    let label = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let closer = closing_mark(line, earlier, label);
    line[closer..].trim().is_empty().then_some(closer)
}

/// Length of what closes a message at the start of `line` (after blanks): a
/// closing tag (`</assistant>`), or a short run of closing marks (`]`, `"`,
/// `)]`) that either closes the marks the reply's line opened with
/// (`[Assistant: …]`, `label`) or also ends a line of the earlier prompt —
/// a fixed suffix the client puts after every message. (At a session's
/// second turn the earlier prompt is the first message alone, which may
/// hold no such mark.)
fn closing_mark(line: &str, earlier: &str, label: &str) -> usize {
    let blank = line.len() - line.trim_start().len();
    let rest = &line[blank..];
    if let Some(n) = closing_tag(rest) {
        return blank + n;
    }
    const MARKS: &[char] = &[']', ')', '}', '"', '\'', '»', '”', '’', '*', '`', '>', '|'];
    let n: usize = rest
        .chars()
        .take_while(|c| MARKS.contains(c))
        .take(3)
        .map(char::len_utf8)
        .sum();
    let mark = &rest[..n];
    let closes_earlier = !mark.is_empty()
        && (earlier.trim_end().ends_with(mark)
            || memchr::memmem::find(earlier.as_bytes(), format!("{mark}\n").as_bytes()).is_some()
            || closes_opened(mark, label));
    match closes_earlier {
        true => blank + n,
        false => 0,
    }
}

/// Whether `mark` closes, in reverse order, the marks `label` (the reply's
/// line up to the reply) opens with: `]` after `[Assistant: `, `)]` after
/// `[(`.
fn closes_opened(mark: &str, label: &str) -> bool {
    let opened: String = label
        .trim_start()
        .chars()
        .take_while(|c| OPENERS.contains(c))
        .take(3)
        .collect();
    let closing: Option<String> = opened
        .chars()
        .rev()
        .map(|c| match c {
            '[' => Some(']'),
            '(' => Some(')'),
            '{' => Some('}'),
            '"' => Some('"'),
            '\'' => Some('\''),
            '«' => Some('»'),
            '“' => Some('”'),
            '‘' => Some('’'),
            '`' => Some('`'),
            _ => None,
        })
        .collect();
    !opened.is_empty() && closing.as_deref() == Some(mark)
}

/// The message's length within the `c` bytes that end `a` and are shared:
/// the shared part may start inside a label (`Aaa aap: q` / `Aap: q` share
/// `ap: q`) or with its punctuation (`: q`); both belong to the labels.
fn message_len(a: &str, c: usize) -> usize {
    let shared = &a[a.len() - c..];
    let mid_word = a[..a.len() - c]
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric);
    let rest = match mid_word {
        true => shared.trim_start_matches(char::is_alphanumeric),
        false => shared,
    };
    rest.trim_start_matches(|ch: char| !ch.is_alphanumeric())
        .len()
}

/// Glue that begins a new line before any word (`\n[Assistant]: `), after
/// an optional closing tag (`</user>\n<assistant>`); not words appended to
/// the message's last line.
fn starts_a_line(glue: &str) -> bool {
    let g = glue.trim_start_matches([' ', '\t']);
    let g = match closing_tag(g) {
        Some(n) => &g[n..],
        None => g,
    };
    match g.find(|c: char| c.is_alphanumeric()) {
        Some(w) => g[..w].contains('\n'),
        None => true,
    }
}

/// A label changed before the newest message once it is history: at a
/// line start, label-shaped, and replaced rather than extended or cut (an
/// edit that puts `(edited)` after a label does not pass for one).
fn relabel_ok(old: &str, new: &str, at_line_start: bool) -> bool {
    let (o, n) = unwrapped(old, new);
    at_line_start
        && label_shaped(old)
        && label_shaped(new)
        && (o.is_empty() || n.is_empty() || !(extends(o, n) || extends(n, o)))
}

/// Whether label `a` is label `b` with more after it (`User (edited):` of
/// `User`), not another word that begins alike (`Caa:` of `C`).
fn extends(a: &str, b: &str) -> bool {
    a.strip_prefix(b)
        .is_some_and(|rest| !rest.starts_with(char::is_alphanumeric))
}

/// Two labels without the mark both open with (`[User: ` / `[`): the
/// wrapper's, not the label's.
fn unwrapped<'a>(old: &'a str, new: &'a str) -> (&'a str, &'a str) {
    let (o, n) = (old.trim(), new.trim());
    let shared = o
        .chars()
        .zip(n.chars())
        .take_while(|(a, b)| a == b && !a.is_alphanumeric())
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    (o[shared..].trim(), n[shared..].trim())
}

/// A label, not words: empty, or ended by punctuation (`User:`, `[User]`,
/// `**Me**`, `<user>`), or a marked line of its own (`## user`). An edit
/// that puts a word or a line before a message, or changes its first
/// words, is not one.
fn label_shaped(label: &str) -> bool {
    // The mark that opens the message belongs to it (`Assistant: "…"`).
    let opened = label.trim_end().trim_end_matches(OPENERS);
    let l = match opened.trim() {
        "" => label.trim(),
        l => l,
    };
    l.is_empty()
        || l.ends_with([':', ']', '>', ')', '*', '|', '=', '-'])
        || (label.ends_with('\n') && l.starts_with(['#', '[', '<', '*', '=', '-']))
        || short_mark(l)
}

/// A role mark of a few characters before the text on its line: symbols
/// (`>`, `«`, `🧑`) or one capital letter (`U q`, `A r`).
fn short_mark(l: &str) -> bool {
    // After the mark that opens the message, if any (`[A r]`).
    let l = match l.trim_start_matches(OPENERS) {
        "" => l,
        rest => rest,
    };
    let n = l.chars().count();
    let symbols = (1..=3).contains(&n)
        && l.chars()
            .all(|c| !c.is_alphanumeric() && !c.is_whitespace());
    let letter = n == 1 && l.chars().all(|c| c.is_ascii_uppercase());
    symbols || letter
}

/// Short, few words, at most two lines: labels and separators, not text.
fn is_glue(s: &str, max_bytes: usize, max_words: usize) -> bool {
    s.len() <= max_bytes && words(s) <= max_words && s.trim().lines().count() <= 2
}

fn words(s: &str) -> usize {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count()
}

/// What follows the reply, without the whitespace and the closing tag or
/// mark (`</assistant>`, `]`: `closer` bytes) that end it.
fn delta_after(prompt: &str, end: usize, closer: usize) -> Range<usize> {
    let rest = &prompt[end + closer..];
    let trimmed = rest.trim_start();
    let mut start = end + closer + (rest.len() - trimmed.len());
    // A closing tag may also stand on a line of its own after the reply.
    if let (0, Some(tag)) = (closer, closing_tag(trimmed)) {
        let after = &trimmed[tag..];
        start += tag + (after.len() - after.trim_start().len());
    }
    start..prompt.len()
}

/// Length of a `</name>` at the start of `s`.
fn closing_tag(s: &str) -> Option<usize> {
    let inner = s.strip_prefix("</")?;
    let close = inner.find('>')?;
    let name = &inner[..close];
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'));
    ok.then_some(2 + close + 1)
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &str, b: &str) -> usize {
    a.bytes()
        .rev()
        .zip(b.bytes().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The largest char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A suffix length of `s` no longer than `n` that starts at a char boundary.
fn floor_from_end(s: &str, n: usize) -> usize {
    s.len() - ceil(s, s.len() - n)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// One pass finds what one search per reply finds: replies longer
        /// and shorter than the key, sharing keys, inside one another,
        /// cut inside a character.
        #[test]
        fn occurring_is_one_search_per_reply(
            text in "[ab\u{e9}\u{4e2d} ]{0,200}",
            replies in proptest::collection::vec("[ab\u{e9}\u{4e2d} ]{0,40}", 0..12),
        ) {
            let replies: Vec<&str> = replies.iter().map(String::as_str).collect();
            let got = occurring(&text, &replies);
            let want: HashSet<&str> = replies
                .iter()
                .copied()
                .filter(|r| !r.is_empty() && text.contains(r))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn occurring_checks_the_whole_reply_after_its_key() {
        let key = "k".repeat(KEY_BYTES);
        let (whole, other) = (format!("{key} right"), format!("{key} wrong"));
        let text = format!("{key} wr... and later {whole}.");
        let got = occurring(&text, &[&whole, &other, &whole, ""]);
        assert_eq!(got, HashSet::from([whole.as_str()]));
    }

    fn cont(prompt: &str, earlier: &str, reply: &str) -> Option<String> {
        let replies = [reply.to_owned()];
        let e = Earlier {
            prompt: earlier,
            replies: &replies,
            // Every earlier prompt here that holds a reply holds `r1`.
            turns: 1 + usize::from(reply != "r1" && earlier.contains("r1")),
        };
        continues(prompt, &e).map(|c| c.delta_text(prompt).to_owned())
    }

    #[test]
    fn sees_through_labels_wrappers_and_suffixes() {
        let cases: &[(&str, &str, &str, &str, &str)] = &[
            // (earlier prompt, reply, new prompt, expected delta, what it shows)
            (
                "q1",
                "r1",
                "q1\n\n--- previous reply ---\nr1\n\nq2",
                "q2",
                "assistant-only labels",
            ),
            (
                "q1",
                "r1",
                "[User]: q1\n[Assistant]: r1\n[User]: q2",
                "[User]: q2",
                "labelled once history",
            ),
            (
                "You help.\n\nq1\n\nanswer briefly",
                "r1",
                "You help.\n\n[User]: q1\n[Assistant]: r1\n[User]: q2\n\nanswer briefly",
                "[User]: q2\n\nanswer briefly",
                "preamble and suffix",
            ),
            (
                "<user>q1</user>",
                "r1",
                "<user>q1</user>\n<assistant>r1</assistant>\n<user>q2</user>",
                "<user>q2</user>",
                "xml-ish tags",
            ),
            (
                "So far:\nUser: q1\nAssistant: r1\n\nNew message: q2",
                "r2",
                "So far:\nUser: q1\nAssistant: r1\nUser: q2\nAssistant: r2\n\nNew message: q3",
                "New message: q3",
                "newest message labelled apart",
            ),
            (
                "tell me about cats\n\nanswer briefly",
                "r1",
                "User: tell me about cats\nAI: r1\nUser: and about dogs and cats\n\nanswer briefly",
                "User: and about dogs and cats\n\nanswer briefly",
                "messages that end alike",
            ),
            (
                "User stories?",
                "r1",
                "User: User stories?\nBot: r1\nUser: more",
                "User: more",
                "label shares letters",
            ),
            (
                "[System instruction: be brief]\n\n[User: q1]",
                "r1",
                "[System instruction: be brief]\n\n[User: q1]\n\n[Assistant: r1]\n\n[User: q2]",
                "[User: q2]",
                "bracketed roles: a closing mark after every message",
            ),
            (
                "[System instruction: be brief]\n\n[User: q1]\n\n[Assistant: r1]\n\n[User: q2]",
                "r2",
                "[System instruction: be brief]\n\n[User: q1]\n\n[Assistant: r1]\n\n[User: q2]\n\n[Assistant: r2]\n\n[User: q3]",
                "[User: q3]",
                "bracketed roles, turn 3",
            ),
            (
                "\"q1\"",
                "r1",
                "User: \"q1\"\nAssistant: \"r1\"\nUser: \"q2\"",
                "User: \"q2\"",
                "quoted messages",
            ),
            (
                "You help.\n\nq1",
                "r1",
                "You help.\n\n> q1\n\n< r1\n\nq2",
                "q2",
                "one block per message, symbol marks",
            ),
            (
                "You help.\n\n> q1\n\n< r1\n\nq2",
                "r2",
                "You help.\n\n> q1\n\n< r1\n\n> q2\n\n< r2\n\nq3",
                "q3",
                "symbol marks, turn 3",
            ),
            (
                "You help.\n\nq1",
                "r1",
                "You help.\n\nU q1\n\nA r1\n\nq2",
                "q2",
                "one block per message, letter marks",
            ),
        ];
        for (earlier, reply, prompt, delta, what) in cases {
            assert_eq!(
                cont(prompt, earlier, reply).as_deref(),
                Some(*delta),
                "{what}"
            );
        }
    }

    #[test]
    fn proof_of_receipt_keeps_its_force() {
        let earlier = "[User]: q1\n[Assistant]: r1\n[User]: q2";
        let cases: &[(&str, &str)] = &[
            // An edited earlier reply, an edited earlier user text.
            ("[User]: q1\n[Assistant]: r1 edited\n[User]: q2\n[Assistant]: r2\n[User]: q3", "edited reply"),
            ("[User]: q1 edited\n[Assistant]: r1\n[User]: q2\n[Assistant]: r2\n[User]: q3", "edited user text"),
            // A line added to the earlier reply, a word to the message.
            ("[User]: q1\n[Assistant]: r1\nedited\n[User]: q2\n[Assistant]: r2\n[User]: q3", "line added"),
            ("[User]: q1\n[Assistant]: r1\n[User]: q2 edited\n[Assistant]: r2\n[User]: q3", "word added"),
            // Another reply than the one the run got.
            ("[User]: q1\n[Assistant]: r1\n[User]: q2\n[Assistant]: other\n[User]: q3", "other reply"),
            // The old prompt and reply quoted inside new text.
            (
                "Please review this exchange I found:\n[User]: q1\n[Assistant]: r1\n[User]: q2\n[Assistant]: r2\nwhat do you think?",
                "quoted",
            ),
            // A transcript that ends with the reply.
            ("[User]: q1\n[Assistant]: r1\n[User]: q2\n[Assistant]: r2\n", "ends with the reply"),
            // Punctuation after the reply that closes no earlier message.
            ("[User]: q1\n[Assistant]: r1\n[User]: q2\n[Assistant]: r2)\n[User]: q3", "mark added"),
            // A word put before the newest earlier message.
            ("[User]: q1\n[Assistant]: r1\n[User]: Also q2\n[Assistant]: r2\n[User]: q3", "word before"),
            // Text inserted between the message and the reply.
            (
                "[User]: q1\n[Assistant]: r1\n[User]: q2\nand also a whole new paragraph here\n[Assistant]: r2\n[User]: q3",
                "inserted text",
            ),
        ];
        for (prompt, what) in cases {
            assert_eq!(cont(prompt, earlier, "r2"), None, "{what}");
        }
    }

    #[test]
    fn a_short_reply_found_in_the_history_first_is_passed_over() {
        // "ok" occurs in q1 before the reply itself.
        let d = cont("book a room\nA: ok\nU: thanks", "book a room", "ok");
        assert_eq!(d.as_deref(), Some("U: thanks"));
    }

    #[test]
    fn multibyte_text_never_splits_a_char() {
        let d = cont("» é q1\n«réponse»: r1 é\n» é q2", "» é q1", "r1 é");
        assert_eq!(d.as_deref(), Some("» é q2"));
        assert_eq!(cont("éé", "é", "é"), None);
    }

    /// A transcript of `k` earlier turns and a new message: a preamble,
    /// each earlier message and reply after its mark, the new one bare.
    fn marked(user: &str, assistant: &str, sep: &str, k: usize) -> String {
        let mut parts = vec!["You are terse.".to_owned()];
        for i in 1..=k {
            parts.push(format!("{user}please consider <c.{i}> and answer"));
            parts.push(format!("{assistant}reply {i} to c.{i}"));
        }
        parts.push(format!("please consider <c.{}> and answer", k + 1));
        parts.join(sep)
    }

    /// Issue 39, item 2: marks that look like words (`u `, `a `, `me `)
    /// are learned from the structure, and a message marked only once it is
    /// history continues the run before, from turn 2 on.
    #[test]
    fn marks_learned_from_the_structure() {
        let pairs = [
            ("u ", "a "),
            ("me ", "ai "),
            ("q ", "r "),
            ("› ", "● "),
            ("U ", "A "),
        ];
        for (user, assistant) in pairs {
            for sep in ["\n\n", "\n"] {
                for k in 1..4 {
                    let prev = marked(user, assistant, sep, k - 1);
                    let now = marked(user, assistant, sep, k);
                    let replies = [format!("reply {k} to c.{k}")];
                    let e = Earlier {
                        prompt: &prev,
                        replies: &replies,
                        turns: k,
                    };
                    let c = continues(&now, &e)
                        .unwrap_or_else(|| panic!("{user:?}/{assistant:?} {sep:?} turn {}", k + 1));
                    assert_eq!(
                        c.delta_text(&now).trim(),
                        format!("please consider <c.{}> and answer", k + 1)
                    );
                }
            }
        }
    }

    /// What the learned marks do not let through: a word put before an
    /// earlier message that is not the client's mark, a mark before the
    /// reply that no message alternates with, and a message with a line
    /// of its own that begins like a mark (the count is off: fresh).
    #[test]
    fn learned_marks_keep_proof_of_receipt() {
        let prev = marked("", "", "\n\n", 0);
        let replies = ["reply 1 to c.1".to_owned()];
        let e = Earlier {
            prompt: &prev,
            replies: &replies,
            turns: 1,
        };
        for (now, what) in [
            (
                "You are terse.\n\nso please consider <c.1> and answer\n\na reply 1 to c.1\n\nnext",
                "a word before the message, not a mark the structure shows",
            ),
            (
                "You are terse.\n\nu so please consider <c.1> and answer\n\na reply 1 to c.1\n\nnext",
                "a word after the mark",
            ),
        ] {
            assert_eq!(continues(now, &e), None, "{what}");
        }
        // The same with the mark: continues.
        let now =
            "You are terse.\n\nu please consider <c.1> and answer\n\na reply 1 to c.1\n\nnext";
        assert!(continues(now, &e).is_some());
        // A word put before the reply, the message unmarked: the preamble's
        // first word is no user mark (an edited reply: `Not safe…`).
        let prev = "You are terse.\nis /var/log/old safe to delete? <c.1>";
        let safe = ["safe to delete.".to_owned()];
        let e1 = Earlier {
            prompt: prev,
            replies: &safe,
            turns: 1,
        };
        let now = "You are terse.\nis /var/log/old safe to delete? <c.1>\nNot safe to delete.\nok so delete it <c.2>";
        assert_eq!(continues(now, &e1), None, "an edited reply");
        let prev = "You are terse.\n\nplease consider <c.1>\na b";
        let e = Earlier {
            prompt: prev,
            replies: &replies,
            turns: 1,
        };
        let now = "You are terse.\n\nu please consider <c.1>\na b\n\na reply 1 to c.1\n\nnext";
        assert_eq!(
            continues(now, &e),
            None,
            "a line that begins like the reply's mark"
        );
    }
}
