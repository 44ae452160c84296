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

#[cfg(test)]
mod tests {
    use super::*;

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
