//! `log`: the recent managed turns, newest first, one row each: when, how it
//! ran and why, which session, what the shim stripped, tokens and cost. The
//! reason sentence sits on the line below its row, wrapped to the terminal.

use super::command::Run;
use super::store_access::{canonical_dir, existing_store};
use super::{human, style, style::Style};
use crate::cache_miss::CacheMiss;
use crate::store::report::{LogRow, Tokens};
use crate::store::runs::{Engine, Kind};
use crate::text::duration;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Recent managed turns, newest first: kind, why, session, bytes, tokens, cost.
#[derive(Args)]
pub struct Log {
    /// Only turns this recent: 30m, 24h, 7d… [default: all the runs log holds]
    #[arg(long, value_name = "SPAN", value_parser = duration::parse)]
    pub since: Option<Duration>,
    /// Only turns run in this directory (the current one if no DIR is given).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub cwd: Option<PathBuf>,
    /// At most this many turns (0: all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Json<'a> {
    since: Option<i64>,
    cwd: Option<&'a str>,
    limit: Option<usize>,
    turns: Vec<Turn<'a>>,
}

#[derive(Serialize)]
struct Turn<'a> {
    at: i64,
    /// Local time, `YYYY-MM-DD HH:MM`.
    time: &'a str,
    cwd: &'a str,
    kind: &'a str,
    why_code: Option<&'a str>,
    why: Option<&'a str>,
    session: Option<&'a str>,
    conv_key: Option<&'a str>,
    /// The status the caller got: a code, or −signal.
    exit: Option<i64>,
    /// `exit N` or the signal's name when the turn failed; null otherwise.
    failure: Option<String>,
    bytes_in: i64,
    bytes_sent: i64,
    /// Null when unknown, never zeros.
    tokens: Option<JsonTokens>,
    usage_from: Option<&'a str>,
    /// `cold` | `warm` | `live` | `handshake`: how the CLI ran.
    engine: Option<&'a str>,
    /// The turn's own cost; null when unknown.
    cost_usd: Option<f64>,
    /// The session's running total as the CLI reported it.
    total_cost_usd: Option<f64>,
    /// Why a resumed, warm or forked turn wrote more to the prompt cache
    /// than it read (`idle`, `model`, `tools`, …); null where it read its
    /// cache, or was a first turn.
    cache_miss: Option<&'static str>,
}

#[derive(Serialize)]
struct JsonTokens {
    input: i64,
    cache_write: i64,
    cache_read: i64,
    output: i64,
}

fn json_turn(r: &LogRow) -> Turn<'_> {
    Turn {
        at: r.at,
        time: &r.local,
        cwd: &r.cwd,
        kind: Kind::text(r.kind),
        why_code: r.why_code.as_deref(),
        why: r.why.as_deref(),
        session: r.session.as_deref(),
        conv_key: r.conv_key.as_deref(),
        exit: r.exit,
        failure: failure(r.exit),
        bytes_in: r.bytes_in,
        bytes_sent: r.bytes_sent,
        tokens: r.tokens.map(|t| JsonTokens {
            input: t.input,
            cache_write: t.cache_write,
            cache_read: t.cache_read,
            output: t.output,
        }),
        usage_from: r.usage_from.as_deref(),
        engine: r.engine.map(Engine::as_str),
        cost_usd: r.cost_usd,
        total_cost_usd: r.total_cost_usd,
        cache_miss: r.cache_miss.map(CacheMiss::as_str),
    }
}

/// What a resumed turn's prompt cache did, for its reason line: why it
/// missed, or that it read it. `None`: a first turn, or usage unknown.
fn cache_note(r: &LogRow) -> Option<String> {
    if !matches!(r.kind, Some(Kind::Resumed | Kind::Forked)) {
        return None;
    }
    let t = r.tokens?;
    Some(match r.cache_miss {
        Some(m) => format!(
            "missed the prompt cache ({} tokens written, {} read): {}",
            human::count(t.cache_write),
            human::count(t.cache_read),
            m.sentence()
        ),
        // It read its cache, however much it wrote past it (a long new
        // message is written on any turn).
        None if t.cache_read == 0 => return None,
        None => format!(
            "read its prompt cache ({} tokens)",
            human::count(t.cache_read)
        ),
    })
}

impl Run for Log {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let now = crate::store::now();
        let since = self.since.map(|s| duration::before(now, s));
        let cwd = self.cwd.as_deref().map(canonical_dir);
        let limit = (self.limit > 0).then_some(self.limit);
        let (rows, today) = match existing_store()? {
            Some(store) => (
                store.recent_runs(since.unwrap_or(0), cwd.as_deref(), limit)?,
                store.local_day(now)?,
            ),
            None => (Vec::new(), String::new()),
        };
        if self.json {
            let json = Json {
                since,
                cwd: cwd.as_deref(),
                limit,
                turns: rows.iter().map(json_turn).collect(),
            };
            serde_json::to_writer_pretty(&mut *out, &json)?;
            writeln!(out)?;
            return Ok(());
        }
        let view = View {
            today: &today,
            home: crate::env::home_text(),
            width: style::terminal_width(),
            style: Style::for_stdout(),
        };
        if rows.is_empty() {
            let span = self.since.map_or(String::new(), |s| {
                format!(" in the last {}", duration::exact(s.as_secs()))
            });
            let place = cwd.map_or(String::new(), |c| format!(" in {c}"));
            writeln!(out, "no managed turns recorded{span}{place}")?;
            writeln!(
                out,
                "(calls that pass straight through, such as `claude --version` or interactive \
                 sessions, are not recorded; `claude-shim explain` shows how one would run)"
            )?;
            return Ok(());
        }
        render(out, &rows, &view)?;
        if limit == Some(rows.len()) {
            writeln!(
                out,
                "{}",
                view.style.dim(&format!(
                    "the newest {} shown; --limit 0 for all, --since/--cwd to narrow",
                    rows.len()
                ))
            )?;
        }
        let legend = match view.width {
            Some(w) => human::wrap(LEGEND, w),
            None => vec![LEGEND.to_owned()],
        };
        for l in legend {
            writeln!(out, "{}", view.style.dim(&l))?;
        }
        Ok(())
    }
}

/// How to show rows: today's local date, HOME for `~`, the terminal width
/// (None off a terminal: nothing is wrapped), colour.
pub struct View<'a> {
    pub today: &'a str,
    pub home: Option<String>,
    pub width: Option<usize>,
    pub style: Style,
}

/// What the kind column's words mean, under the table.
const LEGEND: &str = "kind: fresh = a new session; resumed = the session continued; forked = \
     continued from an earlier turn in a new session; fallback = the CLI refused the resume, \
     rerun fresh; unchanged = run as called. Then: live = a Claude Code process kept for the \
     next turn was started, warm = the turn ran in it, ready = it ran in one started ahead; \
     exit N or a signal = the turn failed.";

const CWD_MAX: usize = 28;
const INDENT: &str = "  ";

fn tokens_cell(t: Option<Tokens>) -> String {
    match t {
        None => "unknown".into(),
        Some(t) => [t.input, t.cache_write, t.cache_read, t.output]
            .map(human::count)
            .join("/"),
    }
}

/// A turn's own cost: more digits than `human::usd`, turns are cheap.
fn cost_cell(c: Option<f64>) -> String {
    match c {
        None => "unknown".into(),
        Some(c) if c < 1.0 => format!("${c:.4}"),
        Some(c) => format!("${c:.2}"),
    }
}

/// The kind, and how the CLI ran when not the usual cold start
/// (`resumed, warm`: in a live CLI kept from the turn before); a failed
/// turn says so instead (`resumed, exit 1`, `fresh, SIGTERM`).
fn kind_cell(r: &LogRow) -> String {
    let kind = Kind::text(r.kind);
    if let Some(failure) = failure(r.exit) {
        return format!("{kind}, {failure}");
    }
    match r.engine {
        None | Some(Engine::Cold) => kind.to_owned(),
        Some(engine) => format!("{kind}, {}", engine.as_str()),
    }
}

/// How a turn failed, from the status the caller got (a code, or −signal):
/// `None` for success or an unknown status.
fn failure(exit: Option<i64>) -> Option<String> {
    match exit? {
        0 => None,
        e if e < 0 => Some(
            nix::sys::signal::Signal::try_from(-e as i32)
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|_| format!("signal {}", -e)),
        ),
        e => Some(format!("exit {e}")),
    }
}

fn paint_kind(s: Style, kind: Option<Kind>, failed: bool, cell: String) -> String {
    if failed {
        return s.red(&cell);
    }
    match kind {
        Some(Kind::Resumed | Kind::Forked) => s.green(&cell),
        Some(Kind::Fallback) => s.yellow(&cell),
        Some(Kind::Unchanged) => s.dim(&cell),
        Some(Kind::Fresh) | None => cell,
    }
}

/// The table: a row per turn, its reason on the line below.
pub fn render(out: &mut dyn Write, rows: &[LogRow], v: &View<'_>) -> std::io::Result<()> {
    let header = [
        "time",
        "kind",
        "session",
        "cwd",
        "prompt in → sent",
        "tokens in/write/read/out",
        "cost",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                human::when(&r.local, v.today),
                kind_cell(r),
                r.session
                    .as_deref()
                    .map_or("-".into(), |s| s.chars().take(8).collect()),
                human::tail(&human::tilde(&r.cwd, v.home.as_deref()), CWD_MAX),
                format!(
                    "{} → {}",
                    human::bytes(r.bytes_in),
                    human::bytes(r.bytes_sent)
                ),
                match failure(r.exit) {
                    // A failed turn's zeros or unknowns are not figures.
                    Some(_) if r.tokens.is_none_or(|t| t == Tokens::default()) => "-".into(),
                    _ => tokens_cell(r.tokens),
                },
                match (failure(r.exit), r.cost_usd) {
                    (Some(_), None) => "-".into(),
                    (Some(_), Some(0.0)) => "-".into(),
                    _ => cost_cell(r.cost_usd),
                },
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    // On a terminal, fit its width: drop the cwd, then the tokens, then the
    // session (`--json` has them all).
    let mut shown = [true; 7];
    let total = |shown: &[bool; 7]| -> usize {
        let cols: Vec<usize> = (0..7).filter(|&i| shown[i]).map(|i| widths[i]).collect();
        cols.iter().sum::<usize>() + 2 * cols.len().saturating_sub(1)
    };
    if let Some(w) = v.width {
        for drop in [3, 5, 2] {
            if total(&shown) <= w {
                break;
            }
            shown[drop] = false;
        }
    }
    let keep = |parts: Vec<String>| -> String {
        parts
            .into_iter()
            .zip(shown)
            .filter(|(_, s)| *s)
            .map(|(p, _)| p)
            .collect::<Vec<_>>()
            .join("  ")
    };
    // Left-aligned text, right-aligned numbers.
    let right = [false, false, false, false, true, true, true];
    let line = |cells: &[String; 7]| -> Vec<String> {
        cells
            .iter()
            .zip(widths)
            .zip(right)
            .map(|((c, w), r)| {
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                if r {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect()
    };
    let head = keep(line(&header.map(String::from)));
    writeln!(out, "{}", v.style.bold(head.trim_end()))?;
    let wrap_at = v.width.map(|w| w.saturating_sub(INDENT.len()).max(20));
    for (r, c) in rows.iter().zip(&cells) {
        let mut parts = line(c);
        let failed = failure(r.exit).is_some();
        parts[1] = paint_kind(v.style, r.kind, failed, std::mem::take(&mut parts[1]));
        writeln!(out, "{}", keep(parts).trim_end())?;
        let why = r
            .why
            .as_deref()
            .unwrap_or("(no reason recorded: an older claude-shim ran this turn)");
        let why = match cache_note(r) {
            Some(note) => format!("{why}; {note}"),
            None => why.to_owned(),
        };
        let why = why.as_str();
        let lines = match wrap_at {
            Some(w) => human::wrap(why, w),
            None => vec![why.split_whitespace().collect::<Vec<_>>().join(" ")],
        };
        for l in lines {
            writeln!(out, "{INDENT}{}", v.style.dim(&l))?;
        }
    }
    if cells.iter().any(|c| c[5] == "unknown" || c[6] == "unknown") {
        let legend = "unknown: not known for that turn (text output reports no cost; a failed \
                      turn or a row of an older claude-shim may have no usage); never counted as 0";
        for l in human::hanging("", legend, v.width) {
            writeln!(out, "{}", v.style.dim(&l))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(local: &str, kind: &str, why: Option<&str>) -> LogRow {
        LogRow {
            at: 0,
            local: local.into(),
            cwd: "/home/u/proj/app".into(),
            kind: crate::store::runs::Kind::from_stored(kind),
            why_code: why.map(|_| "resumed".into()),
            why: why.map(str::to_owned),
            session: Some("6e8e0435-8e12-4245-aa25-f674ed4e97a7".into()),
            bytes_in: 49_152,
            bytes_sent: 900,
            tokens: Some(Tokens {
                input: 10,
                cache_write: 800,
                cache_read: 12_000,
                output: 300,
            }),
            cost_usd: Some(0.0123),
            ..LogRow::default()
        }
    }

    fn view(width: Option<usize>) -> View<'static> {
        View {
            today: "2026-11-22",
            home: Some("/home/u".into()),
            width,
            style: Style::PLAIN,
        }
    }

    fn text(rows: &[LogRow], v: &View<'_>) -> String {
        let mut out = Vec::new();
        render(&mut out, rows, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_row_per_turn_with_its_reason_below() {
        let why = "resumed the session in place at its head";
        let t = text(
            &[
                row("2026-11-22 14:03", "resumed", Some(why)),
                row("2026-11-20 09:30", "fresh", None),
            ],
            &view(None),
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("time"), "{t}");
        assert!(lines[0].contains("tokens in/write/read/out"), "{t}");
        let first = lines[1];
        for part in [
            "14:03",
            "resumed",
            "6e8e0435 ",
            "~/proj/app",
            "48.0 KiB → 900 B",
            "10/800/12,000/300",
            "$0.0123",
        ] {
            assert!(first.contains(part), "{part:?} missing: {first}");
        }
        assert!(
            !first.contains("8e12"),
            "short session in the table: {first}"
        );
        assert_eq!(
            lines[2],
            format!("  {why}; read its prompt cache (12,000 tokens)")
        );
        assert!(lines[3].starts_with("Nov 20 09:30"), "{t}");
        assert!(lines[4].contains("no reason recorded"), "{t}");
        assert!(!t.contains('\x1b'));
    }

    #[test]
    fn a_resumed_turn_says_why_it_missed_its_cache_or_that_it_read_it() {
        let mut missed = row("2026-11-22 14:03", "resumed", Some("resumed"));
        missed.tokens = Some(Tokens {
            input: 3,
            cache_write: 12_000,
            cache_read: 0,
            output: 5,
        });
        missed.cache_miss = Some(CacheMiss::Idle);
        let t = text(std::slice::from_ref(&missed), &view(None));
        assert!(
            t.contains("resumed; missed the prompt cache (12,000 tokens written, 0 read): the session sat idle longer than the cache lives"),
            "{t}"
        );
        let json = serde_json::to_value(json_turn(&missed)).unwrap();
        assert_eq!(json["cache_miss"], "idle");
        // Read all its cached prefix and wrote a long new message: it read.
        let mut long = missed.clone();
        long.tokens = Some(Tokens {
            cache_read: 12_000,
            cache_write: 100_000,
            ..missed.tokens.unwrap()
        });
        long.cache_miss = None;
        let t = text(std::slice::from_ref(&long), &view(None));
        assert!(t.contains("read its prompt cache (12,000 tokens)"), "{t}");
        // A first turn says nothing of it, and its code is null.
        let fresh = row("2026-11-22 14:03", "fresh", Some("first"));
        assert!(!text(std::slice::from_ref(&fresh), &view(None)).contains("prompt cache"));
        assert!(serde_json::to_value(json_turn(&fresh)).unwrap()["cache_miss"].is_null());
    }

    #[test]
    fn unknown_is_shown_as_unknown_never_zero() {
        let mut r = row("2026-11-22 14:03", "resumed", Some("why"));
        r.tokens = None;
        r.cost_usd = None;
        let t = text(&[r], &view(None));
        let line = t.lines().nth(1).unwrap();
        assert!(line.contains("unknown"), "{line}");
        assert!(
            !line.contains("$0.0000") && !line.contains("0/0/0/0"),
            "{line}"
        );
        assert!(t.contains("never counted as 0"), "{t}");
    }

    #[test]
    fn reasons_wrap_to_the_terminal_and_stay_whole_off_it() {
        let why = "this point of the conversation is not the session's latest (an earlier \
                   turn was redone or edited), so it branched from there";
        // (A row of an older shim that missed its cache: no note.)
        let mut forked = row("2026-11-22 14:03", "forked", Some(why));
        forked.tokens.as_mut().unwrap().cache_read = 0;
        let rows = [forked];
        let narrow = text(&rows, &view(Some(40)));
        let reason: Vec<&str> = narrow.lines().skip(2).collect();
        assert!(reason.len() > 2, "{narrow}");
        assert!(reason.iter().all(|l| l.chars().count() <= 40), "{narrow}");
        assert_eq!(
            reason
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" "),
            why.split_whitespace().collect::<Vec<_>>().join(" "),
            "nothing lost"
        );
        let piped = text(&rows, &view(None));
        assert_eq!(piped.lines().count(), 3, "{piped}");
    }

    #[test]
    fn a_warm_turn_says_so_beside_its_kind() {
        let mut r = row("2026-11-22 14:03", "resumed", Some("x"));
        r.engine = Some(Engine::Warm);
        let t = text(&[r], &view(None));
        assert!(t.lines().nth(1).unwrap().contains("resumed, warm"), "{t}");
        let mut r = row("2026-11-22 14:03", "fresh", Some("x"));
        r.engine = Some(Engine::Cold);
        assert!(!text(&[r], &view(None)).contains("cold"));
    }

    #[test]
    fn colour_marks_the_kind_on_a_terminal() {
        let v = View {
            style: Style { color: true },
            ..view(Some(100))
        };
        let t = text(&[row("2026-11-22 14:03", "resumed", Some("x"))], &v);
        assert!(t.contains("\x1b[32mresumed"), "{t:?}");
    }

    #[test]
    fn a_failed_turn_says_how_and_shows_no_zeros_as_figures() {
        let mut api_error = row("2026-11-22 14:03", "fresh", Some("why"));
        api_error.exit = Some(1);
        api_error.engine = Some(Engine::Live);
        api_error.tokens = Some(Tokens::default());
        api_error.cost_usd = Some(0.0);
        let mut killed = row("2026-11-22 14:04", "resumed", Some("why"));
        killed.exit = Some(-15);
        killed.tokens = None;
        killed.cost_usd = None;
        let ok = row("2026-11-22 14:05", "resumed", Some("why"));
        let t = text(&[api_error, killed, ok], &view(None));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("fresh, exit 1"), "{t}");
        assert!(
            !lines[1].contains("0/0/0/0") && !lines[1].contains("$0.0000"),
            "{t}"
        );
        assert!(lines[3].contains("resumed, SIGTERM"), "{t}");
        assert!(!lines[3].contains("unknown"), "{t}");
        assert!(
            lines[5].contains("$0.0123") && !lines[5].contains("exit"),
            "{t}"
        );
        assert_eq!(failure(Some(143)).as_deref(), Some("exit 143"));
        assert_eq!(failure(Some(-9)).as_deref(), Some("SIGKILL"));
        assert_eq!(failure(Some(0)), None);
        assert_eq!(failure(None), None);
    }

    #[test]
    fn a_terminal_of_80_columns_gets_a_table_that_fits() {
        let unknown = LogRow {
            cost_usd: None,
            ..row("2026-11-21 10:00", "fresh", Some("a text-output turn"))
        };
        let rows = [
            row("2026-11-22 14:03", "resumed", Some("why")),
            row("2026-11-20 09:30", "fresh", None),
            unknown,
        ];
        let wide = text(&rows, &view(Some(200)));
        assert!(wide.contains("~/proj/app") && wide.contains("10/800/12,000/300"));
        let narrow = text(&rows, &view(Some(80)));
        assert!(narrow.contains("unknown: not known"), "{narrow}");
        for l in narrow.lines() {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l:?}",
                l.chars().count()
            );
        }
        assert!(
            !narrow.contains("~/proj/app"),
            "the cwd goes first: {narrow}"
        );
        assert!(
            narrow.contains("resumed") && narrow.contains("$0.0123"),
            "{narrow}"
        );
    }
}
