//! `pins`: the conversations the shim can resume, one row each (the newest
//! pin of every session).

use super::command::Run;
use super::store_access::{canonical_dir, existing_store};
use super::{human, style::Style};
use crate::store::report::PinRow;
use crate::text::duration;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Conversations the shim can resume: cwd, turns, session, age, last reply.
#[derive(Args)]
pub struct Pins {
    /// Only conversations in this directory (the current one if no DIR is given).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub cwd: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub session: String,
    pub cwd: String,
    pub turns: i64,
    pub created_at: i64,
    pub age_secs: i64,
    pub reply_preview: String,
    /// Pins of this session (one per turn it reached through the shim).
    pub pins: i64,
    /// The session's transcript, if Claude Code still has it.
    pub session_file: Option<PathBuf>,
}

const PREVIEW: usize = 48;

fn rows(pins: Vec<PinRow>, now: i64, config_dir: Option<&Path>) -> Vec<Row> {
    pins.into_iter()
        .map(|p| Row {
            session_file: config_dir.and_then(|c| crate::sessions::find(c, &p.session)),
            age_secs: now - p.created_at,
            session: p.session,
            cwd: p.cwd,
            turns: p.turns,
            created_at: p.created_at,
            reply_preview: p.reply_preview,
            pins: p.pins,
        })
        .collect()
}

/// What a row needs besides the session and cwd columns: age, turns and
/// the gaps (17), the least of a reply worth a column (20).
const FIXED: usize = 5 + 1 + 5 + 2 + 2 + 2;
const MIN_REPLY: usize = 20;
/// The shortest a cwd's end gets before the ids give way.
const CWD_MIN: usize = 20;
/// The id prefix a row falls back to (every command takes a unique prefix).
const SID_SHORT: usize = 8;
const GONE: &str = " (session file gone)";

/// The session and cwd column widths for `width` columns (`None`: a pipe,
/// full lines): full ids and cwds when they fit, else the cwd down to its
/// end, then the ids down to a prefix; the reply takes what is left.
fn columns(full_sid: usize, full_cwd: usize, gone: bool, width: Option<usize>) -> (usize, usize) {
    let Some(w) = width else {
        return (full_sid, full_cwd);
    };
    let reserve = FIXED + MIN_REPLY + if gone { GONE.len() } else { 0 };
    let cwd_for = |sid: usize| {
        w.saturating_sub(reserve + sid)
            .clamp(CWD_MIN.min(full_cwd), full_cwd)
    };
    let cwd = cwd_for(full_sid);
    if reserve + full_sid + cwd <= w {
        return (full_sid, cwd);
    }
    let sid = SID_SHORT.min(full_sid);
    (sid, cwd_for(sid))
}

/// The table; fitted to `width` columns when given (a terminal), see
/// [`columns`].
pub fn render(
    out: &mut dyn Write,
    rows: &[Row],
    home: Option<&str>,
    s: Style,
    width: Option<usize>,
) -> std::io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "no pinned conversations");
    }
    let full: Vec<String> = rows.iter().map(|r| human::tilde(&r.cwd, home)).collect();
    let longest = |cells: Vec<&str>, header: &str| {
        cells
            .iter()
            .map(|c| c.chars().count())
            .fold(header.len(), usize::max)
    };
    let full_sid = longest(rows.iter().map(|r| r.session.as_str()).collect(), "session");
    let full_cwd = longest(full.iter().map(String::as_str).collect(), "cwd");
    let gone = rows.iter().any(|r| r.session_file.is_none());
    let (sid_w, cwd_w) = columns(full_sid, full_cwd, gone, width);
    let before_preview = FIXED + sid_w + cwd_w;
    writeln!(
        out,
        "{}",
        s.bold(&format!(
            "{:<5} {:>5}  {:<sid_w$}  {:<cwd_w$}  last reply",
            "age", "turns", "session", "cwd"
        ))
    )?;
    for (r, cwd) in rows.iter().zip(&full) {
        let gone = r.session_file.is_none();
        let preview_w = match width {
            Some(w) => w
                .saturating_sub(before_preview + if gone { GONE.len() } else { 0 })
                .max(12),
            None => PREVIEW,
        };
        writeln!(
            out,
            "{:<5} {:>5}  {:<sid_w$}  {}  {}{}",
            duration::short(r.age_secs),
            r.turns,
            r.session.get(..sid_w).unwrap_or(&r.session),
            human::cell(&human::tail(cwd, cwd_w), cwd_w),
            human::preview(&r.reply_preview, preview_w),
            if gone { s.yellow(GONE) } else { String::new() },
        )?;
    }
    Ok(())
}

impl Run for Pins {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let cwd = self.cwd.as_deref().map(canonical_dir);
        let pins = match existing_store()? {
            Some(store) => store.latest_pins(cwd.as_deref())?,
            None => Vec::new(),
        };
        let config = crate::env::claude_config_dir();
        let rows = rows(pins, crate::store::now(), config.as_deref());
        if self.json {
            serde_json::to_writer_pretty(&mut *out, &rows)?;
            writeln!(out)?;
            return Ok(());
        }
        let home = crate::env::home_text();
        let width = super::style::terminal_width();
        render(out, &rows, home.as_deref(), Style::for_stdout(), width)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_show_age_session_cwd_and_one_line_preview() {
        let pins = vec![PinRow {
            session: "6e8e0435-8e12-4245-aa25-f674ed4e97a7".into(),
            cwd: "/home/u/proj".into(),
            turns: 4,
            created_at: 1000,
            reply_preview: "Sure.\nHere is\tthe plan".into(),
            pins: 4,
        }];
        let rows = rows(pins, 1000 + 7200, None);
        let mut out = Vec::new();
        render(&mut out, &rows, Some("/home/u"), Style::PLAIN, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().nth(1).unwrap();
        assert!(line.starts_with("2h        4  6e8e0435-"), "{line}");
        assert!(line.contains("~/proj"), "{line}");
        assert!(
            line.contains("Sure. Here is the plan (session file gone)"),
            "{line}"
        );
    }

    fn table(cwd: &str, width: Option<usize>) -> String {
        let pins = vec![PinRow {
            session: "6e8e0435-8e12-4245-aa25-f674ed4e97a7".into(),
            cwd: cwd.into(),
            turns: 4,
            created_at: 1000,
            reply_preview: "a reply ".repeat(20),
            pins: 4,
        }];
        let rows = rows(pins, 1000 + 7200, None);
        let mut out = Vec::new();
        render(&mut out, &rows, Some("/home/u"), Style::PLAIN, width).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn ids_and_cwds_are_shortened_only_as_far_as_the_width_needs() {
        let id = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let long = "/home/u/work/clients/acme/a-rather-long-project-name/app";
        let cwd = "~/work/clients/acme/a-rather-long-project-name/app";
        let end = |n: usize| format!("…{}", &cwd[cwd.len() - (n - 1)..]);
        // (width, what the row shows): whole on a pipe and when it fits;
        // then the cwd's end; then an id prefix, the cwd getting back the room.
        let cases = [
            (None, format!("  {id}  {cwd}  a reply")),
            (Some(200), format!("  {id}  {cwd}  a reply")),
            (Some(120), format!("  {id}  {}  a reply", end(27))),
            (Some(90), format!("  6e8e0435  {}  a reply", end(25))),
            (Some(60), format!("  6e8e0435  {}  a reply", end(20))),
        ];
        for (width, want) in cases {
            let t = table(long, width);
            assert!(
                t.lines().nth(1).is_some_and(|l| l.contains(&want)),
                "{width:?}: {want}\n{t}"
            );
            if let Some(w) = width.filter(|&w| w >= 80) {
                assert!(t.lines().all(|l| l.chars().count() <= w), "{w}:\n{t}");
            }
        }
        // A short cwd leaves room for the whole id, and a reply, at 100.
        let short = table("/home/u/proj", Some(100));
        assert!(short.contains(&format!("  {id}  ~/proj  ")), "{short}");
    }

    #[test]
    fn a_terminal_of_80_columns_gets_a_table_that_fits() {
        let pins = vec![PinRow {
            session: "6e8e0435-8e12-4245-aa25-f674ed4e97a7".into(),
            cwd: "/home/u/work/clients/acme/a-rather-long-project-name/app".into(),
            turns: 575,
            created_at: 1000,
            reply_preview: "a long reply ".repeat(20),
            pins: 4,
        }];
        let rows = rows(pins, 1000 + 7200, None);
        let mut out = Vec::new();
        render(&mut out, &rows, Some("/home/u"), Style::PLAIN, Some(80)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for l in text.lines() {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        let line = text.lines().nth(1).unwrap();
        assert!(
            line.contains("  6e8e0435  …"),
            "an id prefix, the cwd's end: {line}"
        );
        assert!(line.contains("name/app"), "{line}");
        assert!(line.contains("(session file gone)"), "{line}");
    }
}
