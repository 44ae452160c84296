//! Numbers and text for people: byte sizes, thousands, money, one-line previews.

/// `1536` → `1.5 KiB`; exact bytes below 1 KiB.
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n.abs() < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// `1234567` → `1,234,567`.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with cents, or more digits for small amounts.
pub fn usd(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("${v:.4}")
    } else {
        format!("${v:.2}")
    }
}

/// The text on one line (whitespace runs become one space), at most `max`
/// characters, with `…` when cut.
pub fn preview(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Pad or cut to exactly `width` characters (left-aligned).
pub fn cell(text: &str, width: usize) -> String {
    let short = preview(text, width);
    let pad = width.saturating_sub(short.chars().count());
    format!("{short}{}", " ".repeat(pad))
}

/// `/home/u/x` → `~/x` for display (whole components only).
pub fn tilde(path: &str, home: Option<&str>) -> String {
    match home.and_then(|h| path.strip_prefix(h)) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => path.to_owned(),
    }
}

/// At most `max` characters, keeping the end (`…/proj/app`): the end of a
/// path tells directories apart.
pub fn tail(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().skip(n + 1 - max.max(1)).collect();
    format!("…{kept}")
}

/// Words into lines of at most `width` characters (a longer word gets a
/// line of its own). A `code span` is one word, kept exactly as written: a
/// command is never broken where pasting it would change what it does.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let words = words(text);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in &words {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` split at whitespace, but a `code span` stays inside its word,
/// exactly as written. A backtick that nothing closes is plain text, or the
/// rest would never break.
fn words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, _)) = chars.peek() {
        let mut end = start;
        while let Some((i, c)) = chars.next_if(|&(_, c)| !c.is_whitespace()) {
            end = i + c.len_utf8();
            if let Some(after) = (c == '`').then(|| span_end(text, end)).flatten() {
                while chars.next_if(|&(j, _)| j < after).is_some() {}
                end = after;
            }
        }
        if end > start {
            words.push(&text[start..end]);
        }
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
    }
    words
}

/// Where a code span opened just before `text[from..]` ends (the byte after
/// its closing backtick): the first backtick that ends a word (whitespace,
/// the end or punctuation next) outside a command's single quotes, so a
/// quoted path such as `'/a `b` c'` stays inside; else the first that ends
/// a word at all (an apostrophe in the span).
fn span_end(text: &str, from: usize) -> Option<usize> {
    let ends_word = |after: usize| {
        text[after..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || ",.;:)!?".contains(c))
    };
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in text[from..].char_indices() {
        let at = from + i;
        match c {
            _ if escaped => escaped = false,
            '\\' if !quoted => escaped = true,
            '\'' => quoted = !quoted,
            '`' if !quoted && ends_word(at + 1) => return Some(at + 1),
            _ => {}
        }
    }
    text[from..]
        .match_indices('`')
        .map(|(j, _)| from + j + 1)
        .find(|&after| ends_word(after))
}

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn wraps_words_but_never_inside_a_code_span() {
        let text =
            "fix: run `claude-shim install`, add `eval \"$(claude-shim init bash)\"` to ~/.bashrc";
        let lines = wrap(text, 24);
        assert!(
            lines
                .iter()
                .any(|l| l == "`eval \"$(claude-shim init bash)\"`"),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("`claude-shim install`,")),
            "{lines:?}"
        );
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap("a b c", 3), ["a b", "c"]);
    }

    #[test]
    fn an_unclosed_backtick_is_plain_text() {
        assert_eq!(
            wrap("a stray ` then words that break as usual", 16),
            ["a stray ` then", "words that break", "as usual"]
        );
        assert_eq!(
            wrap("it`s one tick and more words here", 12),
            ["it`s one", "tick and", "more words", "here"]
        );
    }

    #[test]
    fn a_code_span_keeps_its_quoted_backticks_and_spaces() {
        // What `doctor` prints for a data directory named "it's a  `dir` x".
        let fix = r"`chmod 700 '/h/it'\''s a  `dir` x'`";
        let lines = wrap(&format!("run {fix}, then `x`. done"), 12);
        assert_eq!(lines, ["run", &format!("{fix},"), "then `x`.", "done"]);
        // An apostrophe in a span of prose does not hold it open.
        assert_eq!(wrap("`it's` and `b`", 6), ["`it's`", "and", "`b`"]);
    }
}

/// `label` then `text`, wrapped to `width` columns with later lines
/// indented to the label's width (`None`: one line, as for a pipe).
pub fn hanging(label: &str, text: &str, width: Option<usize>) -> Vec<String> {
    let indent = label.chars().count();
    let Some(width) = width else {
        return vec![format!("{label}{text}")];
    };
    let lines = wrap(text, width.saturating_sub(indent).max(20));
    if lines.is_empty() {
        return vec![label.trim_end().to_owned()];
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("{label}{l}"),
            _ => format!("{}{l}", " ".repeat(indent)),
        })
        .collect()
}

/// A paragraph of prose, wrapped to `width` columns (`None`: one line).
pub fn say(out: &mut dyn std::io::Write, text: &str, width: Option<usize>) -> std::io::Result<()> {
    for l in hanging("", text, width) {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A local `YYYY-MM-DD HH:MM` as people read it against `today`
/// (`YYYY-MM-DD`): `14:03` today, `Nov 20 14:03` this year, else
/// `2024-11-20 14:03`.
pub fn when(local: &str, today: &str) -> String {
    let (Some(day), Some(time)) = (local.get(..10), local.get(11..)) else {
        return local.to_owned();
    };
    if day == today {
        return time.to_owned();
    }
    let month = day
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)));
    match (month, day.get(8..10), day.get(..4) == today.get(..4)) {
        (Some(month), Some(d), true) => format!("{month} {} {time}", d.trim_start_matches('0')),
        _ => local.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_wrapping_and_times_for_people() {
        assert_eq!(tilde("/home/u", Some("/home/u")), "~");
        assert_eq!(tilde("/home/u/x", Some("/home/u")), "~/x");
        assert_eq!(tilde("/home/ux", Some("/home/u")), "/home/ux");
        assert_eq!(tilde("/w", None), "/w");
        assert_eq!(tail("~/proj/app", 20), "~/proj/app");
        assert_eq!(tail("~/a/long/way/to/proj/app", 10), "…/proj/app");
        assert_eq!(tail("~/a/long/way/to/proj/app", 10).chars().count(), 10);
        assert_eq!(
            wrap("the shim has not seen these earlier turns before", 16),
            ["the shim has not", "seen these", "earlier turns", "before"]
        );
        assert_eq!(wrap("a verylongword b", 4), ["a", "verylongword", "b"]);
        assert!(wrap("  ", 10).is_empty());
        let today = "2026-11-22";
        assert_eq!(when("2026-11-22 14:03", today), "14:03");
        assert_eq!(when("2026-11-02 09:15", today), "Nov 2 09:15");
        assert_eq!(when("2026-01-20 23:59", today), "Jan 20 23:59");
        assert_eq!(when("2025-12-31 23:59", today), "2025-12-31 23:59");
        assert_eq!(when("garbage", today), "garbage");
    }

    #[test]
    fn sizes_counts_and_money() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 << 20), "5.0 MiB");
        assert_eq!(bytes(-2048), "-2.0 KiB");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-12_345), "-12,345");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(1.234), "$1.23");
        assert_eq!(usd(0.00123), "$0.0012");
    }

    #[test]
    fn previews_are_one_line_and_bounded() {
        assert_eq!(preview("a\n\n b\tc", 10), "a b c");
        assert_eq!(preview("héllo wörld", 6), "héllo…");
        assert_eq!(preview("abc", 3), "abc");
        assert_eq!(cell("ab", 4), "ab  ");
        assert_eq!(cell("abcdef", 4), "abc…");
    }
}
