//! `sessions`: every Claude Code session of a directory (or of every
//! project), whoever made it, with what the shim knows of it: running ones
//! first, then the newest. A table that fits the terminal, or `--json`.

use super::command::Run;
use super::session_list::{self as list, Session, Which};
use super::store_access::{canonical_dir, existing_store, STORE_FIX};
use super::{human, style, style::Style};
use crate::text::duration;
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Claude Code sessions of a directory, made through the shim or not.
#[derive(Args)]
pub struct Sessions {
    /// Sessions of this directory (the current one if no DIR is given) [default]
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub cwd: Option<PathBuf>,
    /// Sessions of every project.
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// Machine-readable output: every field of every session.
    #[arg(long)]
    pub json: bool,
}

impl Run for Sessions {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let config = crate::env::claude_config_dir()
            .context("no Claude Code config dir: set CLAUDE_CONFIG_DIR or HOME")?;
        let which = match (&self.cwd, self.all) {
            (_, true) => Which::All,
            (Some(dir), false) => Which::Dir(canonical_dir(dir)),
            (None, false) => Which::Dir(canonical_dir(std::path::Path::new("."))),
        };
        // A store that cannot be read is named; the files still list.
        let store = existing_store().unwrap_or_else(|e| {
            crate::error!("sessions: the store: {e:#}");
            let _ = writeln!(
                std::io::stderr(),
                "claude-shim: {e:#}\nclaude-shim: listing the session files without pins \
                 or leases; {}",
                STORE_FIX
            );
            None
        });
        let live = live_processes();
        let rows = list::gather(&config, &which, store.as_ref(), &live);
        if self.json {
            serde_json::to_writer_pretty(&mut *out, &rows)?;
            writeln!(out)?;
            return Ok(());
        }
        let view = View {
            now: crate::store::now(),
            home: crate::env::home_text(),
            width: style::terminal_width(),
            style: Style::for_stdout(),
            all: matches!(which, Which::All),
        };
        render(out, &rows, &which, &view)?;
        Ok(())
    }
}

/// The keeper's live CLIs, if a keeper runs (never starts one).
fn live_processes() -> Vec<crate::warm::protocol::Live> {
    let Ok(Some(dir)) = crate::data_dir::DataDir::existing() else {
        return Vec::new();
    };
    if !crate::warm::socket::socket(&dir).exists() {
        return Vec::new();
    }
    crate::warm::client::Keeper::connect(&dir, false)
        .and_then(|mut k| k.status().ok())
        .map(|s| s.live)
        .unwrap_or_default()
}

pub struct View {
    pub now: i64,
    pub home: Option<String>,
    /// Columns to fit in (`None`: not a terminal, nothing is cut).
    pub width: Option<usize>,
    pub style: Style,
    /// Every project: a project column.
    pub all: bool,
}

/// `1234` → `1.2k`: a table cell, not an invoice.
fn si(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

fn state(r: &Session) -> &'static str {
    match (&r.running, &r.warm) {
        (Some(_), _) => "running",
        (None, Some(w)) if w.state == crate::warm::protocol::LiveState::Idle => "warm",
        _ => "",
    }
}

fn shim_cell(r: &Session) -> String {
    match &r.shim {
        None => "-".into(),
        Some(s) if s.pins == 0 => "leased".into(),
        Some(s) => {
            let turns = format!("{} turn{}", s.turns, if s.turns == 1 { "" } else { "s" });
            match s.ephemeral {
                true => format!("{turns}, ephemeral"),
                false => turns,
            }
        }
    }
}

/// One column: its cells, how it aligns, and when it goes if the terminal
/// is too narrow (higher goes first; 0 never).
struct Column {
    head: &'static str,
    cells: Vec<String>,
    right: bool,
    drop: u8,
}

impl Column {
    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain([self.head.len()])
            .max()
            .unwrap_or(0)
    }
}

const GAP: usize = 2;
/// The title keeps at least this much before columns go.
const TITLE_MIN: usize = 24;

/// The header and a line per session: its cells, then its title in what
/// room is left (`title_w`).
fn table(
    out: &mut dyn Write,
    rows: &[Session],
    columns: &[Column],
    title_w: Option<usize>,
    s: Style,
) -> std::io::Result<()> {
    let widths: Vec<usize> = columns.iter().map(Column::width).collect();
    let pad = |text: &str, w: usize, right: bool| {
        let fill = " ".repeat(w.saturating_sub(text.chars().count()));
        match right {
            true => format!("{fill}{text}"),
            false => format!("{text}{fill}"),
        }
    };
    let gap = " ".repeat(GAP);
    let mut head: Vec<String> = columns
        .iter()
        .zip(&widths)
        .map(|(c, w)| pad(c.head, *w, c.right))
        .collect();
    head.push("title".into());
    writeln!(out, "{}", s.bold(&head.join(&gap)))?;
    for (i, r) in rows.iter().enumerate() {
        let mut line: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| {
                let cell = pad(&c.cells[i], *w, c.right);
                match c.head {
                    "state" if r.running.is_some() => s.green(&cell),
                    "state" => s.yellow(&cell),
                    _ => cell,
                }
            })
            .collect();
        let title = match (&r.title, &r.path) {
            (_, None) => s.yellow("(session file gone)"),
            (Some(t), _) => human::preview(t, title_w.unwrap_or(200)),
            (None, _) => s.dim("(no message yet)"),
        };
        line.push(title);
        writeln!(out, "{}", line.join(&gap).trim_end())?;
    }
    Ok(())
}

/// Columns with nothing to say go; then, on a terminal `width` wide, the
/// least needed until the title has room.
fn fit(columns: &mut Vec<Column>, width: Option<usize>) {
    columns.retain(|c| c.drop == 0 || c.cells.iter().any(|x| !x.is_empty()));
    let Some(width) = width else { return };
    while fixed(columns) + TITLE_MIN > width {
        let Some((i, _)) = columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.drop > 0)
            .max_by_key(|(_, c)| c.drop)
        else {
            break;
        };
        columns.remove(i);
    }
}

/// The width the columns take, their gaps included.
fn fixed(cols: &[Column]) -> usize {
    cols.iter().map(|c| c.width() + GAP).sum()
}

pub fn render(
    out: &mut dyn Write,
    rows: &[Session],
    which: &Which,
    v: &View,
) -> std::io::Result<()> {
    let s = v.style;
    let place = match which {
        Which::All => "any project".to_owned(),
        Which::Dir(d) => human::tilde(d, v.home.as_deref()),
    };
    // A long project path wraps like the rest of the prose.
    let say = |out: &mut dyn Write, text: &str| human::say(out, text, v.width);
    let note = |out: &mut dyn Write, text: &str| -> std::io::Result<()> {
        for l in human::hanging("", text, v.width) {
            writeln!(out, "{}", s.dim(&l))?;
        }
        Ok(())
    };
    if rows.is_empty() {
        say(out, &format!("no Claude Code sessions in {place}"))?;
        if !v.all {
            note(out, "(--all lists the sessions of every project)")?;
        }
        return Ok(());
    }
    let running = rows.iter().filter(|r| r.running.is_some()).count();
    let warm = rows.iter().filter(|r| state(r) == "warm").count();
    let mut summary = format!(
        "{} session{} in {place}",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
    for (n, what) in [(running, "running"), (warm, "warm")] {
        if n > 0 {
            summary.push_str(&format!(", {n} {what}"));
        }
    }
    say(out, &summary)?;

    let col = |head, right, drop, f: &dyn Fn(&Session) -> String| Column {
        head,
        cells: rows.iter().map(f).collect(),
        right,
        drop,
    };
    let mut columns = vec![
        col("state", false, 0, &|r| state(r).into()),
        col("session", false, 0, &|r| r.id.clone()),
        col("modified", true, 0, &|r| {
            r.modified
                .map_or("-".into(), |m| duration::short(v.now - m))
        }),
        col("msgs", true, 3, &|r| r.messages.to_string()),
        col("tokens in/out", true, 2, &|r| {
            format!("{}/{}", si(r.input_tokens), si(r.output_tokens))
        }),
        col("size", true, 5, &|r| {
            r.file_size.map_or("-".into(), |b| human::bytes(b as i64))
        }),
        col("compact", true, 6, &|r| match r.compactions {
            0 => String::new(),
            n => n.to_string(),
        }),
        col("shim", false, 1, &shim_cell),
        col("branch", false, 7, &|r| {
            // The CLI records `HEAD` outside a repository (and when
            // detached): no branch to show.
            r.git_branch
                .clone()
                .filter(|b| b != "HEAD")
                .unwrap_or_default()
        }),
        col("version", false, 8, &|r| {
            r.version.clone().unwrap_or_default()
        }),
    ];
    if v.all {
        columns.push(col("project", false, 4, &|r| {
            let cwd = r.cwd.as_deref().unwrap_or("?");
            human::tail(&human::tilde(cwd, v.home.as_deref()), 32)
        }));
    }
    fit(&mut columns, v.width);
    let title_w = v
        .width
        .map(|w| w.saturating_sub(fixed(&columns)).max(TITLE_MIN));
    table(out, rows, &columns, title_w, s)?;
    note(
        out,
        "claude --resume <session> continues one; --json shows every field",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::listing::ShimSession;

    fn row(id: &str, title: &str) -> Session {
        Session {
            id: id.into(),
            path: Some(PathBuf::from("/c/x.jsonl")),
            cwd: Some("/home/u/proj".into()),
            title: Some(title.into()),
            git_branch: Some("main".into()),
            version: Some("2.1.330".into()),
            modified: Some(1000),
            messages: 14,
            input_tokens: 1_234_567,
            cache_write_tokens: 0,
            cache_read_tokens: 0,
            output_tokens: 3_400,
            compactions: 1,
            file_size: Some(230 * 1024),
            running: None,
            warm: None,
            shim: None,
        }
    }

    fn view(width: Option<usize>) -> View {
        View {
            now: 1120,
            home: Some("/home/u".into()),
            width,
            style: Style::PLAIN,
            all: false,
        }
    }

    fn text(rows: &[Session], v: &View) -> String {
        let mut out = Vec::new();
        render(&mut out, rows, &Which::Dir("/home/u/proj".into()), v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_header_wraps_a_long_project_path() {
        let place = "/home/u/work/clients/acme/a rather long project name/services/app";
        for rows in [
            vec![],
            vec![row("6e8e0435-8e12-4245-aa25-f674ed4e97a7", "t")],
        ] {
            let mut out = Vec::new();
            render(&mut out, &rows, &Which::Dir(place.into()), &view(Some(40))).unwrap();
            let t = String::from_utf8(out).unwrap();
            let header: Vec<&str> = t.lines().take_while(|l| !l.starts_with("state")).collect();
            assert!(header.len() > 1, "{t}");
            for l in header {
                assert!(l.chars().count() <= 40, "{l}\n{t}");
            }
        }
    }

    #[test]
    fn a_row_says_what_the_session_holds_and_what_the_shim_knows() {
        let mut a = row(
            "6e8e0435-8e12-4245-aa25-f674ed4e97a7",
            "fix the login\nflow",
        );
        a.running = Some(list::Running { pid: 9 });
        a.shim = Some(ShimSession {
            session: a.id.clone(),
            cwd: None,
            turns: 7,
            pins: 7,
            conversation: None,
            pinned_at: None,
            ephemeral: true,
            config_dir: None,
            lease_pid: None,
        });
        let got = text(&[a], &view(None));
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines[0], "1 session in ~/proj, 1 running");
        assert!(lines[1].starts_with("state    session"), "{got}");
        for want in [
            "running  6e8e0435-8e12-4245-aa25-f674ed4e97a7",
            "2m",
            "14",
            "1.2M/3.4k",
            "230.0 KiB",
            "7 turns, ephemeral",
            "main",
            "2.1.330",
            "fix the login flow",
        ] {
            assert!(lines[2].contains(want), "{want:?} in {:?}", lines[2]);
        }
    }

    #[test]
    fn head_is_no_branch() {
        let mut r = row("6e8e0435-8e12-4245-aa25-f674ed4e97a7", "a title");
        r.git_branch = Some("HEAD".into());
        let t = text(&[r], &view(Some(200)));
        assert!(!t.lines().nth(1).unwrap().contains("HEAD"), "{t}");
    }

    #[test]
    fn a_narrow_terminal_drops_the_least_needed_columns_and_cuts_the_title() {
        let rows = [row(
            "6e8e0435-8e12-4245-aa25-f674ed4e97a7",
            &"word ".repeat(60),
        )];
        let wide = text(&rows, &view(Some(200)));
        assert!(wide.contains("version") && wide.contains("branch"));
        let narrow = text(&rows, &view(Some(100)));
        for line in narrow.lines().skip(1).take(2) {
            assert!(line.chars().count() <= 100, "{line:?}");
        }
        assert!(!narrow.contains("version") && !narrow.contains("branch"));
        assert!(narrow.contains("session") && narrow.contains("…"));
        // Off a terminal nothing is cut.
        assert!(text(&rows, &view(None)).contains(&"word ".repeat(39)));
    }

    #[test]
    fn none_and_gone() {
        assert!(text(&[], &view(None)).starts_with("no Claude Code sessions in ~/proj"));
        let mut gone = row("6e8e0435-8e12-4245-aa25-f674ed4e97a7", "");
        gone.path = None;
        assert!(text(&[gone], &view(None)).contains("(session file gone)"));
    }

    #[test]
    fn si_units() {
        assert_eq!(
            [si(999), si(1_234), si(2_500_000), si(3_000_000_000)],
            ["999", "1.2k", "2.5M", "3.0G"]
        );
    }
}
