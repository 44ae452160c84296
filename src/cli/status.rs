//! `status`: one glance. Whether this shell reaches the shim and how, the
//! real claude behind it, how many conversations are pinned, how many of
//! this week's managed turns resumed and what that saved (an estimate),
//! and how the last turn ran and why. `doctor` is the full check.

use super::command::Run;
use super::doctor::activation::{self, How};
use super::store_access::existing_store;
use super::tally::{self, Totals};
use super::{doctor, human, style::Style};
use crate::store::report::LogRow;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// One glance: active or not, the real claude, pins, this week's savings, the last turn.
#[derive(Args)]
pub struct Status {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Shim directory, if installed with --dir [default: $CLAUDE_SHIM_HOME/bin]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

const WEEK: i64 = 7 * 86_400;

/// What status shows, gathered once for both outputs.
#[derive(Debug, Default, Serialize)]
pub struct Glance {
    pub version: String,
    pub active: bool,
    /// `path` | `alias`, or null when not active.
    pub mode: Option<How>,
    pub active_detail: String,
    pub fix: Option<String>,
    pub real: Option<PathBuf>,
    pub real_version: Option<String>,
    pub pinned: i64,
    /// The last 7 days (see `stats --json` for the fields).
    pub week: Totals,
    pub last_turn: Option<LastTurn>,
    /// The live CLIs kept in the background for warm turns (null: no keeper runs).
    pub background: Option<Background>,
    /// Why the database could not be read (pins, week and last turn are
    /// then unknown).
    pub store_error: Option<String>,
    /// Why turns cannot record themselves in the data directory (a
    /// read-only or full file system: every turn then runs as without the
    /// shim), each with its fix: `doctor`'s failed `disk space` and
    /// `writes` checks.
    pub data_dir_problems: Vec<doctor::Check>,
}

/// What runs in the background: the keeper's live CLIs and their memory.
#[derive(Debug, Default, Serialize)]
pub struct Background {
    pub keeper_pid: u32,
    pub live_clis: usize,
    /// Their resident memory together, in bytes (what /proc says).
    pub memory_bytes: u64,
    /// The most they may hold together (`CLAUDE_SHIM_WARM_MEMORY`).
    pub memory_budget_bytes: u64,
    pub max_live_clis: usize,
    pub idle_ttl_secs: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct LastTurn {
    pub at: i64,
    /// Local time, `YYYY-MM-DD HH:MM`.
    pub time: String,
    /// As people read it (`14:03` today).
    #[serde(skip)]
    pub when: String,
    pub kind: String,
    pub why_code: Option<String>,
    pub why: Option<String>,
}

fn last_turn(r: LogRow, today: &str) -> LastTurn {
    LastTurn {
        at: r.at,
        when: human::when(&r.local, today),
        time: r.local,
        kind: crate::store::runs::Kind::text(r.kind).to_owned(),
        why_code: r.why_code,
        why: r.why,
    }
}

fn gather(dir: Option<&std::path::Path>) -> Glance {
    let facts = doctor::gather(dir);
    let a = activation::judge(&facts);
    let mut g = Glance {
        version: facts.shim_version.clone(),
        active: a.how.is_some(),
        mode: a.how,
        // The first line: the rest is advice doctor gives.
        active_detail: a.detail.lines().next().unwrap_or_default().to_owned(),
        fix: a.fix,
        real: facts.real.clone().filter(|_| !facts.real_is_shim),
        real_version: facts.capabilities.as_ref().map(|c| c.version.clone()),
        ..Glance::default()
    };
    g.data_dir_problems = doctor::room::trouble(&facts);
    // A damaged database is doctor's to explain; the rest still shows.
    if let Err(e) = from_store(&mut g) {
        g.store_error = Some(format!("{e:#}"));
    }
    g.background = background();
    g
}

/// The keeper's live CLIs, if one runs (asked over its socket; a data dir
/// that is not private is never connected to).
fn background() -> Option<Background> {
    let s = super::warm::connect().ok()??.status().ok()?;
    Some(Background {
        keeper_pid: s.pid,
        live_clis: s.live.len(),
        memory_bytes: s.live.iter().filter_map(|l| l.rss_bytes).sum(),
        memory_budget_bytes: s.memory,
        max_live_clis: s.max,
        idle_ttl_secs: s.ttl_secs,
    })
}

fn from_store(g: &mut Glance) -> Result<()> {
    let store = match existing_store() {
        Ok(Some(store)) => store,
        Ok(None) => return Ok(()),
        // One that cannot be opened for writing (a read-only or full file
        // system) can still be read.
        Err(e) => read_only_store().ok_or(e)?,
    };
    let now = crate::store::now();
    g.pinned = store.count_pinned()?;
    g.week = tally::tally(&store.runs_since(now - WEEK, None)?).total;
    let today = store.local_day(now)?;
    g.last_turn = store
        .recent_runs(0, None, Some(1))?
        .into_iter()
        .next()
        .map(|r| last_turn(r, &today));
    Ok(())
}

/// The local store, opened only to read.
fn read_only_store() -> Option<crate::store::Store> {
    use crate::store::backend::Location;
    let dir = crate::data_dir::DataDir::existing().ok()??;
    if !matches!(Location::configured(&dir).ok()?, Location::Sqlite) {
        return None;
    }
    crate::store::Store::open_read_only(&dir.join(crate::store::DB_FILE)).ok()
}

impl Run for Status {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let g = gather(self.dir.as_deref());
        if self.json {
            serde_json::to_writer_pretty(&mut *out, &g)?;
            writeln!(out)?;
            return Ok(());
        }
        render(out, &g, Style::for_stdout(), super::style::terminal_width())?;
        Ok(())
    }
}

fn plural(n: i64, one: &str, many: &str) -> String {
    format!("{} {}", human::count(n), if n == 1 { one } else { many })
}

/// The glance, each value wrapped to `width` columns beside its label
/// (`None`: a pipe, one line each).
pub fn render(
    out: &mut dyn Write,
    g: &Glance,
    s: Style,
    width: Option<usize>,
) -> std::io::Result<()> {
    const LABEL: usize = 12;
    let put = |out: &mut dyn Write, l: &str, value: String| -> std::io::Result<()> {
        let lines = match width {
            Some(w) => human::wrap(&value, w.saturating_sub(LABEL + 1).max(20)),
            None => vec![value],
        };
        for (i, line) in lines.iter().enumerate() {
            match i {
                0 => writeln!(out, "{} {line}", s.bold(&format!("{l:<LABEL$}")))?,
                _ => writeln!(out, "{:LABEL$} {line}", "")?,
            }
        }
        Ok(())
    };
    writeln!(out, "{}", s.bold(&format!("claude-shim {}", g.version)))?;
    // The detail names the mode: "yes, PATH mode: … is the shim".
    let active = match g.mode {
        Some(_) => format!("{},", s.green("yes")),
        None => format!("{}:", s.red("no")),
    };
    put(out, "active", format!("{active} {}", g.active_detail))?;
    if let Some(fix) = &g.fix {
        put(out, "", format!("{} {fix}", s.bold("fix:")))?;
    }
    let real = match (&g.real, &g.real_version) {
        (Some(p), Some(v)) => format!("{} ({v})", p.display()),
        (Some(p), None) => format!("{} (version unknown)", p.display()),
        (None, _) => s.red("not found (see `claude-shim doctor`)"),
    };
    put(out, "real claude", real)?;
    let mut last_fix = None;
    for p in &g.data_dir_problems {
        // The first line: the error itself is doctor's to show.
        let first = p.detail.lines().next().unwrap_or_default();
        let detail = match p.level {
            doctor::Level::Fail => s.red(first),
            _ => s.yellow(first),
        };
        put(out, "data dir", detail)?;
        // Two problems of one full disk have one fix: said once.
        if let Some(fix) = p.fix.as_ref().filter(|f| last_fix != Some(*f)) {
            put(out, "", format!("{} {fix}", s.bold("fix:")))?;
        }
        last_fix = p.fix.as_ref();
    }
    // A data dir that cannot be written is why its store cannot be opened
    // for writing: said once, above.
    if let Some(e) = g
        .store_error
        .as_ref()
        .filter(|_| g.data_dir_problems.is_empty())
    {
        put(
            out,
            "database",
            format!(
                "{} (see `claude-shim doctor`)",
                s.red(&format!("unreadable: {e}"))
            ),
        )?;
    }
    put(
        out,
        "pinned",
        plural(g.pinned, "conversation", "conversations"),
    )?;
    let w = &g.week;
    if w.turns == 0 {
        put(out, "this week", "no managed turns".into())?;
    } else {
        put(
            out,
            "this week",
            format!(
                "{} of {} resumed (resumed or forked)",
                human::count(w.resumed + w.forked),
                plural(w.turns, "managed turn", "managed turns"),
            ),
        )?;
        put(out, "saved", saved(w))?;
    }
    match &g.last_turn {
        None => put(out, "last turn", "none recorded".into())?,
        Some(t) => {
            let why = t.why.as_deref().unwrap_or("no reason recorded");
            put(out, "last turn", format!("{} {}: {why}", t.when, t.kind))?;
        }
    }
    let background = match &g.background {
        None => "no live CLIs (none kept now)".to_owned(),
        Some(b) => format!(
            "{} using {} of {}, idle ones end after {} (`claude-shim warm status`; off: CLAUDE_SHIM_WARM=0)",
            plural(b.live_clis as i64, "live CLI", "live CLIs"),
            human::bytes(b.memory_bytes as i64),
            human::bytes(b.memory_budget_bytes as i64),
            crate::text::duration::exact(b.idle_ttl_secs),
        ),
    };
    put(out, "background", background)?;
    if !g.active || g.store_error.is_some() || !g.data_dir_problems.is_empty() {
        writeln!(out, "{}", s.dim("`claude-shim doctor` checks everything"))?;
    }
    Ok(())
}

/// This week's estimated saving, labelled as one; unknown when no turn
/// had a known cost or usage.
fn saved(w: &Totals) -> String {
    if w.resumed + w.forked == 0 {
        return "nothing yet: no turn resumed this week".into();
    }
    let usd = w.saved_usd.map(|u| format!("~{}", human::usd(u)));
    let tokens = w
        .saved_tokens
        .map(|t| format!("~{} billed-equivalent input tokens", human::count(t)));
    let what = match (usd, tokens) {
        (Some(u), Some(t)) => format!("{u} and {t}"),
        (Some(u), None) => u,
        (None, Some(t)) => t,
        (None, None) => return "unknown (no turn this week recorded its cost or usage)".into(),
    };
    format!("{what} (estimate: the same turns replaying their history)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::report::Tokens;

    fn glance() -> Glance {
        let rows = [
            ("fresh", Some(0.05)),
            ("resumed", Some(0.01)),
            ("forked", None),
        ]
        .map(|(kind, cost)| crate::store::report::RunRow {
            day: "2026-11-22".into(),
            kind: crate::store::runs::Kind::from_stored(kind),
            bytes_in: 40_000,
            bytes_sent: 1000,
            tokens: Some(Tokens {
                input: 10,
                cache_write: 100,
                cache_read: 12_000,
                output: 300,
            }),
            cost_usd: cost,
            exit: Some(0),
            replay_misses_prefix: false,
        });
        Glance {
            version: "0.1.0".into(),
            active: true,
            mode: Some(How::Path),
            active_detail: "PATH mode: /d/bin/claude is the shim".into(),
            real: Some("/usr/bin/claude".into()),
            real_version: Some("2.1.330".into()),
            pinned: 3,
            week: tally::tally(&rows).total,
            last_turn: Some(LastTurn {
                when: "14:03".into(),
                kind: "resumed".into(),
                why: Some("resumed the session in place at its head".into()),
                ..LastTurn::default()
            }),
            ..Glance::default()
        }
    }

    fn text(g: &Glance) -> String {
        let mut out = Vec::new();
        render(&mut out, g, Style::PLAIN, None).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_terminal_of_80_columns_gets_lines_that_fit() {
        let mut g = glance();
        g.fix = Some(
            "run `claude-shim install`, add `eval \"$(claude-shim init bash)\"` to ~/.bashrc, \
             then open a new shell (or `--mode alias` in the init line for this shell only)"
                .into(),
        );
        g.last_turn.as_mut().unwrap().why = Some(
            "this Claude Code (before 1.0.128) lacks --resume, --session-id, --fork-session \
             or --resume-session-at, so the turn ran as the caller asked"
                .into(),
        );
        let mut out = Vec::new();
        render(&mut out, &g, Style::PLAIN, Some(80)).unwrap();
        let fitted = String::from_utf8(out).unwrap();
        for l in fitted.lines() {
            assert!(l.chars().count() <= 80, "{l}\n{fitted}");
        }
        assert!(
            fitted.lines().count() > text(&g).lines().count(),
            "{fitted}"
        );
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(flat(&fitted), flat(&text(&g)), "only wrapped");
    }

    #[test]
    fn a_data_dir_that_cannot_be_written_is_said_once_with_its_fix() {
        let mut g = glance();
        let problem = |name, detail: &str| doctor::Check {
            name,
            level: doctor::Level::Fail,
            detail: detail.into(),
            fix: Some("make room on that file system".into()),
        };
        g.data_dir_problems = vec![
            problem("disk space", "0 B free on the file system of /d"),
            problem(
                "writes",
                "a turn cannot write in /d: its file system is full.\nthe error: x",
            ),
        ];
        g.store_error = Some("switching to WAL: database or disk is full".into());
        let out = text(&g);
        let dir: Vec<&str> = out.lines().filter(|l| l.starts_with("data dir")).collect();
        assert_eq!(dir.len(), 2, "{out}");
        assert!(dir[1].ends_with("its file system is full."), "{out}");
        assert_eq!(out.matches("fix: make room").count(), 1, "{out}");
        assert!(!out.contains("unreadable"), "{out}");
        assert!(!out.contains("the error"), "{out}");
        assert!(
            out.contains("`claude-shim doctor` checks everything"),
            "{out}"
        );
    }

    #[test]
    fn one_line_per_question() {
        let t = text(&glance());
        for want in [
            "claude-shim 0.1.0\n",
            "active       yes, PATH mode: /d/bin/claude is the shim\n",
            "real claude  /usr/bin/claude (2.1.330)\n",
            "pinned       3 conversations\n",
            "this week    2 of 3 managed turns resumed (resumed or forked)\n",
            "last turn    14:03 resumed: resumed the session in place at its head\n",
        ] {
            assert!(t.contains(want), "{want:?} missing:\n{t}");
        }
        let saved = t.lines().find(|l| l.starts_with("saved")).unwrap();
        assert!(
            saved.contains("~$") && saved.contains("(estimate"),
            "{saved}"
        );
        assert!(saved.contains("billed-equivalent input tokens"), "{saved}");
        assert!(!t.contains("doctor"), "{t}");
    }

    #[test]
    fn inactive_says_so_with_the_fix_and_unknown_savings_stay_unknown() {
        let mut g = glance();
        g.active = false;
        g.mode = None;
        g.active_detail = "the shim is not set up".into();
        g.fix = Some("run `claude-shim install`".into());
        g.week = tally::tally(&[crate::store::report::RunRow {
            kind: Some(crate::store::runs::Kind::Resumed),
            ..Default::default()
        }])
        .total;
        g.last_turn = None;
        let t = text(&g);
        assert!(t.contains("active       no: the shim is not set up"), "{t}");
        assert!(t.contains("fix: run `claude-shim install`"), "{t}");
        assert!(t.contains("saved        unknown"), "{t}");
        assert!(t.contains("last turn    none recorded"), "{t}");
        assert!(t.contains("claude-shim doctor"), "{t}");
        assert!(!t.contains("$0.00"), "{t}");
    }
}
