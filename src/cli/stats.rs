//! `stats`: what the shim did over a span, from the runs log: turns by kind,
//! prompt bytes stripped, tokens and cost, an estimate of the replay cost
//! (see `tally`), and one bar per day.

use super::command::Run;
use super::store_access::{canonical_dir, existing_store};
use super::tally::{self, Tally, Totals};
use super::{chart, human, style::Style};
use crate::text::duration;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Turns seen, bytes stripped, tokens and cost, per day, with a chart.
#[derive(Args)]
pub struct Stats {
    /// How far back: 30m, 24h, 7d, 2w…
    #[arg(long, default_value = "7d", value_parser = duration::parse)]
    pub since: Duration,
    /// Only turns run in this directory (the current one if no DIR is given).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub cwd: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

const BAR_WIDTH: usize = 24;
const PASS_THROUGH_NOTE: &str =
    "pass-through runs exec the real claude without opening the database, so they are not counted";

const COST_NOTE: &str = "cost_usd is each turn's own cost (what it added to its session; the \
    CLI's total_cost_usd is cumulative), summed over the turns that recorded one; null when \
    none did. Likewise the token sums. turns_cost_unknown and turns_tokens_unknown count the rest";
const REPLAY_NOTE: &str = "replay_*, saved_* are estimates: replayed, each turn's cache reads \
    past the prefix fresh calls share (shared_prefix_tokens) would have been cache writes \
    (1.25× the input price) instead of cache reads (cache_read_price: read back from the turns' \
    own costs when cache_read_price_fitted, else the list 0.1×); over the turns of known cost, \
    never below their actual cost";

#[derive(Serialize)]
struct Json<'a> {
    since: i64,
    until: i64,
    cwd: Option<&'a str>,
    /// Always null: pass-through runs are not recorded.
    pass_through: Option<i64>,
    pass_through_note: &'static str,
    cost_note: &'static str,
    replay_estimate_note: &'static str,
    #[serde(flatten)]
    tally: &'a Tally,
}

impl Run for Stats {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let now = crate::store::now();
        let since = duration::before(now, self.since);
        let cwd = self.cwd.as_deref().map(canonical_dir);
        let rows = match existing_store()? {
            Some(store) => store.runs_since(since, cwd.as_deref())?,
            None => Vec::new(),
        };
        let t = tally::tally(&rows);
        if self.json {
            let json = Json {
                since,
                until: now,
                cwd: cwd.as_deref(),
                pass_through: None,
                pass_through_note: PASS_THROUGH_NOTE,
                cost_note: COST_NOTE,
                replay_estimate_note: REPLAY_NOTE,
                tally: &t,
            };
            serde_json::to_writer_pretty(&mut *out, &json)?;
            writeln!(out)?;
            return Ok(());
        }
        let span = duration::exact(self.since.as_secs());
        let scope = cwd.map_or(String::new(), |c| format!(" in {c}"));
        let width = super::style::terminal_width();
        render(
            out,
            &t,
            &format!("last {span}{scope}"),
            Style::for_stdout(),
            width,
        )?;
        Ok(())
    }
}

/// The human report.
/// The human report, its prose wrapped to `width` columns (`None`: a pipe).
pub fn render(
    out: &mut dyn Write,
    t: &Tally,
    title: &str,
    s: Style,
    width: Option<usize>,
) -> std::io::Result<()> {
    let k = &t.total;
    let para = |out: &mut dyn Write, label: &str, text: &str| -> std::io::Result<()> {
        for l in human::hanging(label, text, width) {
            writeln!(out, "{l}")?;
        }
        Ok(())
    };
    writeln!(out, "{}", s.bold(&format!("claude-shim stats, {title}")))?;
    if k.turns == 0 {
        writeln!(out, "no managed turns recorded")?;
        para(
            out,
            "pass-through    ",
            &format!("not counted ({PASS_THROUGH_NOTE})"),
        )?;
        return Ok(());
    }
    let n = human::count;
    writeln!(out, "turns           {}", n(k.turns))?;
    for (name, v) in [
        ("resumed", k.resumed),
        ("forked", k.forked),
        ("fresh", k.fresh),
        ("fallback", k.fallback),
        ("unchanged", k.unchanged),
    ] {
        writeln!(out, "  {name:<13} {}", n(v))?;
    }
    if k.failed > 0 {
        writeln!(
            out,
            "  {:<13} {}",
            "failed",
            s.red(&format!(
                "{} (an error exit or a signal: `claude-shim log` shows which)",
                n(k.failed)
            ))
        )?;
    }
    if k.other > 0 {
        writeln!(out, "  {:<13} {}", "other", n(k.other))?;
    }
    writeln!(out, "  {:<13} not counted", "pass-through")?;
    let pct = if k.bytes_in > 0 {
        format!(
            " ({:.0}%)",
            100.0 * k.bytes_stripped as f64 / k.bytes_in as f64
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "prompt bytes    {} in, {} sent, {} stripped{pct}",
        human::bytes(k.bytes_in),
        human::bytes(k.bytes_sent),
        human::bytes(k.bytes_stripped)
    )?;
    para(out, "tokens          ", &tokens_line(k))?;
    para(out, "cost            ", &cost_line(k))?;
    if let Some(line) = replay_line(k) {
        para(out, "replayed        ", &line)?;
    }
    if let Some(saved) = k.saved_tokens {
        para(
            out,
            "saved tokens    ",
            &format!(
                "~{} billed-equivalent input tokens over {} of known usage (estimate)",
                human::count(saved),
                turns(k.turns - k.turns_tokens_unknown)
            ),
        )?;
    }
    writeln!(out)?;
    let max = t.days.iter().map(|d| d.totals.turns).max().unwrap_or(0) as f64;
    writeln!(
        out,
        "{}",
        s.bold("day          turns  resumed   stripped       cost  turns/day")
    )?;
    for d in &t.days {
        let x = &d.totals;
        writeln!(
            out,
            "{:<10} {:>7} {:>8} {:>10} {:>10}  {}",
            d.day,
            n(x.turns),
            n(x.resumed + x.forked),
            human::bytes(x.bytes_stripped),
            day_cost(x),
            s.green(&chart::bar(x.turns as f64, max, BAR_WIDTH))
        )?;
    }
    writeln!(out)?;
    for l in human::hanging("", FOOTNOTE, width) {
        writeln!(out, "{}", s.dim(&l))?;
    }
    Ok(())
}

const FOOTNOTE: &str =
    "resumed = resumed + forked; a failed turn counts as failed, not under its kind. Costs are each turn's own (what it added to its \
     session; the CLI's totals are cumulative); unknown where the turn recorded none, never \
     counted as $0 (≥: some turns of that day unknown). \"replayed\" estimates the same turns \
     re-sending their history as fresh calls: each would read only the prefix fresh calls \
     share from the cache (the CLI's system prompt and tools, taken from this period's fresh \
     turns) and write the rest anew, so those tokens move from cache reads to cache writes \
     (1.25x the input price), priced from each turn's own cost; the cache-read price (0.1x \
     on most models, less on some) is read back from the turns' costs where they tell it. \
     Saved tokens are those moved tokens times (1.25 - that price), in input-token prices.";

/// "1 turn" / "3 turns".
fn turns(n: i64) -> String {
    if n == 1 {
        "1 turn".into()
    } else {
        format!("{} turns", human::count(n))
    }
}

fn tokens_line(k: &Totals) -> String {
    let known = k.turns - k.turns_tokens_unknown;
    let (Some(i), Some(w), Some(r), Some(o)) = (
        k.input_tokens,
        k.cache_write_tokens,
        k.cache_read_tokens,
        k.output_tokens,
    ) else {
        return "unknown (no turn recorded its usage)".into();
    };
    let n = human::count;
    let mut line = format!(
        "input {}, cache write {}, cache read {}, output {}",
        n(i),
        n(w),
        n(r),
        n(o)
    );
    if k.turns_tokens_unknown > 0 {
        line.push_str(&format!(
            " ({} known; {} unknown)",
            turns(known),
            turns(k.turns_tokens_unknown)
        ));
    }
    line
}

fn cost_line(k: &Totals) -> String {
    let Some(cost) = k.cost_usd else {
        return "unknown (no turn recorded its cost)".into();
    };
    let known = k.turns_cost_known();
    if k.turns_cost_unknown > 0 {
        format!(
            "{} actual ({} known; {} unknown)",
            human::usd(cost),
            turns(known),
            turns(k.turns_cost_unknown)
        )
    } else {
        format!("{} actual ({})", human::usd(cost), turns(known))
    }
}

/// The estimate, for the turns whose actual cost is known.
fn replay_line(k: &Totals) -> Option<String> {
    let (replay, saved) = (k.replay_cost_usd?, k.saved_usd?);
    Some(format!(
        "~{} for the same {} (estimate), saved ~{}",
        human::usd(replay),
        turns(k.turns_cost_known()),
        human::usd(saved)
    ))
}

/// One day's cost: the sum, `≥` it when some turns are unknown, or unknown.
fn day_cost(x: &Totals) -> String {
    match x.cost_usd {
        None => "unknown".into(),
        Some(c) if x.turns_cost_unknown > 0 => format!("≥{}", human::usd(c)),
        Some(c) => human::usd(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::report::{RunRow, Tokens};

    fn row(day: &str, kind: &str) -> RunRow {
        RunRow {
            day: day.into(),
            kind: crate::store::runs::Kind::from_stored(kind),
            bytes_in: 4000,
            bytes_sent: 400,
            tokens: Some(Tokens {
                input: 10,
                cache_write: 20,
                cache_read: 3000,
                output: 5,
            }),
            cost_usd: Some(0.01),
            exit: Some(0),
            replay_misses_prefix: false,
        }
    }

    #[test]
    fn plain_report_has_counts_days_and_bars() {
        let rows = [
            row("2026-01-01", "fresh"),
            row("2026-01-02", "resumed"),
            row("2026-01-02", "resumed"),
            row("2026-01-02", "forked"),
            row("2026-01-02", "fallback"),
        ];
        let mut out = Vec::new();
        render(
            &mut out,
            &tally::tally(&rows),
            "last 7d",
            Style::PLAIN,
            None,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\x1b'), "plain has no escapes");
        assert!(text.contains("turns           5"), "{text}");
        assert!(text.contains("  resumed       2"), "{text}");
        assert!(text.contains("  pass-through  not counted"), "{text}");
        assert!(text.contains("17.6 KiB stripped (90%)"), "{text}");
        let day1 = text.lines().find(|l| l.starts_with("2026-01-01")).unwrap();
        let day2 = text.lines().find(|l| l.starts_with("2026-01-02")).unwrap();
        assert!(day2.ends_with(&"█".repeat(BAR_WIDTH)), "{day2}");
        assert!(day1.ends_with(&"█".repeat(BAR_WIDTH / 4)), "{day1}");
        assert!(text.contains("(estimate)"));
    }

    #[test]
    fn unknown_costs_and_tokens_are_shown_as_unknown_never_as_zero() {
        let unknown = |day: &str| RunRow {
            tokens: None,
            cost_usd: None,
            ..row(day, "resumed")
        };
        let rows = [
            row("2026-01-01", "fresh"),
            row("2026-01-01", "resumed"),
            row("2026-01-01", "resumed"),
            unknown("2026-01-01"),
            unknown("2026-01-02"),
        ];
        let mut out = Vec::new();
        render(
            &mut out,
            &tally::tally(&rows),
            "last 7d",
            Style::PLAIN,
            None,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("cost            $0.03 actual (3 turns known; 2 turns unknown)"),
            "{text}"
        );
        assert!(
            text.contains("(3 turns known; 2 turns unknown)\n"),
            "{text}"
        );
        assert!(
            text.contains("replayed        ~$") && text.contains("for the same 3 turns (estimate)"),
            "{text}"
        );
        let day1 = text.lines().find(|l| l.starts_with("2026-01-01")).unwrap();
        let day2 = text.lines().find(|l| l.starts_with("2026-01-02")).unwrap();
        assert!(day1.contains("≥$0.03"), "{day1}");
        assert!(day2.contains("unknown"), "{day2}");
        assert!(!day2.contains("$0.00"), "{day2}");

        let mut out = Vec::new();
        render(
            &mut out,
            &tally::tally(&[unknown("2026-01-02")]),
            "last 7d",
            Style::PLAIN,
            None,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("cost            unknown"), "{text}");
        assert!(text.contains("tokens          unknown"), "{text}");
        assert!(
            !text.contains("replayed    "),
            "no estimate without a cost: {text}"
        );
        assert!(!text.contains("$0.00"), "{text}");
    }

    #[test]
    fn empty_report_says_so() {
        let mut out = Vec::new();
        render(
            &mut out,
            &Tally::default(),
            "last 7d",
            Style { color: true },
            None,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("no managed turns recorded"));
        assert!(text.contains("not counted"));
    }

    #[test]
    fn a_terminal_of_80_columns_gets_lines_that_fit() {
        let failed = RunRow {
            exit: Some(143),
            tokens: None,
            cost_usd: None,
            ..row("2026-01-02", "resumed")
        };
        let rows = [
            row("2026-01-01", "fresh"),
            row("2026-01-02", "resumed"),
            failed,
        ];
        for tally in [tally::tally(&rows), Tally::default()] {
            let mut out = Vec::new();
            render(&mut out, &tally, "last 7d", Style::PLAIN, Some(80)).unwrap();
            let text = String::from_utf8(out).unwrap();
            for l in text.lines() {
                assert!(
                    l.chars().count() <= 80,
                    "{} columns: {l}\n{text}",
                    l.chars().count()
                );
            }
            let mut wide = Vec::new();
            render(&mut wide, &tally, "last 7d", Style::PLAIN, None).unwrap();
            let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(
                flat(&text),
                flat(&String::from_utf8(wide).unwrap()),
                "only wrapped"
            );
        }
    }
}
