//! Spans on the command line (`--since 7d`, `--older-than 30d`): a number
//! and one unit, s m h d w.

use std::time::Duration;

/// Parse `30m`, `24h`, `7d`, `2w` (also `45s`). For clap's `value_parser`.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{s}` needs a unit: s, m, h, d or w (e.g. 7d)"))?;
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` should start with a whole number (e.g. 7d)"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "unknown unit `{unit}` in `{s}`: use s, m, h, d or w (e.g. 7d)"
            ))
        }
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("`{s}` is too long"))
}

/// The largest whole unit that fits: `90s` → `1m`, `36h` → `1d`.
pub fn short(secs: i64) -> String {
    let secs = secs.max(0);
    for (unit, size) in [("w", 7 * 86_400), ("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= size {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// A span as typed: the largest of d, h, m, s that divides it exactly
/// (`7d` stays `7d`, not `1w`).
pub fn exact(secs: u64) -> String {
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs > 0 && secs % size == 0 {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// The epoch second `span` before `now`, clamped at the epoch.
pub fn before(now: i64, span: Duration) -> i64 {
    now.saturating_sub(i64::try_from(span.as_secs()).unwrap_or(i64::MAX))
        .max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_unit_and_rejects_the_rest() {
        let ok = [
            ("45s", 45),
            ("30m", 1800),
            ("24h", 86_400),
            ("7d", 604_800),
            ("2w", 1_209_600),
            (" 1d ", 86_400),
            ("0d", 0),
        ];
        for (s, secs) in ok {
            assert_eq!(parse(s), Ok(Duration::from_secs(secs)), "{s}");
        }
        for bad in [
            "",
            "7",
            "d",
            "7x",
            "7 d",
            "-1d",
            "1.5d",
            "7days",
            "99999999999999999999w",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn short_picks_the_largest_unit() {
        let table = [
            (-5, "0s"),
            (0, "0s"),
            (59, "59s"),
            (90, "1m"),
            (7200, "2h"),
            (36 * 3600, "1d"),
            (15 * 86_400, "2w"),
        ];
        for (secs, want) in table {
            assert_eq!(short(secs), want, "{secs}");
        }
    }

    #[test]
    fn exact_keeps_days() {
        let table = [
            (604_800, "7d"),
            (90_000, "25h"),
            (1800, "30m"),
            (61, "61s"),
            (0, "0s"),
        ];
        for (secs, want) in table {
            assert_eq!(exact(secs), want, "{secs}");
        }
    }

    #[test]
    fn before_clamps() {
        assert_eq!(before(100, Duration::from_secs(30)), 70);
        assert_eq!(before(100, Duration::from_secs(300)), 0);
        assert_eq!(before(100, Duration::from_secs(u64::MAX)), 0);
    }
}
