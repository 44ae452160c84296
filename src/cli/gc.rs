//! `gc`: drop pins that can no longer resume anything, and old runs rows.
//!
//! - Pins whose session file is gone (`<claude config>/projects/*/<id>.jsonl`,
//!   under the current `CLAUDE_CONFIG_DIR` or `~/.claude`). If that config dir
//!   has no `projects/` at all, this check is skipped rather than taken to
//!   mean every session is gone (gc may be running with another HOME).
//! - Pins older than `--older-than`, by default Claude Code's own
//!   `cleanupPeriodDays` (from `<config>/settings.json`, else 30 days): by
//!   then Claude Code has deleted the transcript anyway.
//! - Runs rows (the data behind `stats`) older than `--runs-older-than`, 90
//!   days by default; they are small but would otherwise grow forever.
//!
//! Then VACUUM. Dropping a pin never costs correctness: that conversation's
//! next turn simply runs fresh.

use super::command::Run;
use super::human;
use super::store_access::existing_store;
use crate::text::duration;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Drop pins whose session files are gone or that are older than the
/// cutoff, and old runs rows; then VACUUM.
#[derive(Args)]
pub struct Gc {
    /// Drop pins older than this [default: Claude Code's cleanupPeriodDays, else 30d]
    #[arg(long, value_name = "SPAN", value_parser = duration::parse)]
    pub older_than: Option<Duration>,
    /// Drop runs rows (the data behind `stats`) older than this.
    #[arg(long, value_name = "SPAN", default_value = "90d", value_parser = duration::parse)]
    pub runs_older_than: Duration,
    /// Say what would be dropped; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Machine-readable output: what was (or would be) dropped.
    #[arg(long)]
    pub json: bool,
}

/// `gc --json`.
#[derive(serde::Serialize)]
struct Report<'a> {
    dry_run: bool,
    /// Pins, session records and runs rows dropped (or that would be).
    dropped: crate::store::report::Removed,
    /// Pinned sessions whose files are gone.
    sessions_gone: usize,
    pins_older_than_secs: u64,
    pins_cutoff_set_by: &'a str,
    runs_older_than_secs: u64,
    /// Database size before and after VACUUM (null on a dry run or a shared store).
    size_before: Option<u64>,
    size_after: Option<u64>,
}

const DEFAULT_CLEANUP_DAYS: u64 = 30;

/// `cleanupPeriodDays` from Claude Code's settings.json text, if set and sane.
pub fn cleanup_days(settings: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(settings).ok()?;
    v.get("cleanupPeriodDays")?.as_u64()
}

/// The pin cutoff span and where it came from.
fn pin_span(arg: Option<Duration>, config_dir: Option<&Path>) -> (Duration, String) {
    if let Some(d) = arg {
        return (d, "--older-than".into());
    }
    let settings = config_dir.map(|c| c.join("settings.json"));
    let days = settings
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| cleanup_days(&t));
    match (days, settings) {
        (Some(d), Some(p)) => (
            Duration::from_secs(d * 86_400),
            format!("cleanupPeriodDays in {}", p.display()),
        ),
        _ => (
            Duration::from_secs(DEFAULT_CLEANUP_DAYS * 86_400),
            "Claude Code's default cleanupPeriodDays".into(),
        ),
    }
}

impl Run for Gc {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        // The cutoff is reported even when there is nothing to apply it to.
        let config = crate::env::claude_config_dir();
        let (span, why) = pin_span(self.older_than, config.as_deref());
        let cutoff = (span.as_secs(), why.as_str());
        let Some(mut store) = existing_store()? else {
            match self.json {
                true => self.report(out, Default::default(), 0, cutoff, None)?,
                false => writeln!(out, "nothing to collect (nothing is recorded yet)")?,
            }
            return Ok(());
        };
        let width = super::style::terminal_width();
        let now = crate::store::now();
        let pins_before = duration::before(now, span);
        let runs_before = duration::before(now, self.runs_older_than);

        let projects = config.as_ref().map(|c| c.join("projects"));
        let gone: Vec<String> = match (&config, &projects) {
            (Some(config), Some(p)) if p.is_dir() => store
                .pinned_sessions()?
                .into_iter()
                .filter(|s| crate::sessions::find(config, s).is_none())
                .collect(),
            _ => {
                let dir = projects.map_or("<no HOME>".into(), |p| p.display().to_string());
                let note = format!(
                    "{dir} does not exist: not checking for gone session files \
                     (set CLAUDE_CONFIG_DIR to the config dir your tools use)"
                );
                // Never inside the JSON on stdout.
                match self.json {
                    true => eprintln!("claude-shim gc: {note}"),
                    false => human::say(out, &note, width)?,
                }
                Vec::new()
            }
        };
        let span_text = duration::exact(span.as_secs());
        let runs_text = duration::exact(self.runs_older_than.as_secs());
        if self.dry_run {
            let would = store.count_prunable(&gone, pins_before, runs_before)?;
            if self.json {
                return self.report(out, would, gone.len(), cutoff, None);
            }
            human::say(
                out,
                &format!(
                    "would drop {} pin(s) (of {} session(s) whose files are gone, or unused for \
                 longer than the cutoff of {span_text}, set by {why}), {} session record(s) no \
                 pin would need any more, and {} runs row(s) older than {runs_text}",
                    would.pins,
                    gone.len(),
                    would.sessions,
                    would.runs
                ),
                width,
            )?;
            return Ok(());
        }
        let size =
            |store: &crate::store::Store| store.file().map(crate::store::sqlite::size_on_disk);
        let size_before = size(&store);
        let removed = store.prune(&gone, pins_before, runs_before)?;
        store.vacuum()?;
        let size_after = size(&store);
        if self.json {
            let sizes = size_before.zip(size_after);
            return self.report(out, removed, gone.len(), cutoff, sizes);
        }
        human::say(
            out,
            &format!(
                "dropped {} pin(s) (of {} session(s) whose files are gone, or unused for longer \
             than the cutoff of {span_text}, set by {why})",
                removed.pins,
                gone.len()
            ),
            width,
        )?;
        human::say(
            out,
            &format!(
                "dropped {} session record(s) no pin needs any more, and {} runs row(s) (the data \
             behind `stats` and `log`) older than {runs_text}",
                removed.sessions, removed.runs
            ),
            width,
        )?;
        if let Some((before, after)) = size_before.zip(size_after) {
            human::say(
                out,
                &format!(
                    "database {} -> {} after VACUUM",
                    human::bytes(before as i64),
                    human::bytes(after as i64)
                ),
                width,
            )?;
        }
        Ok(())
    }
}

impl Gc {
    fn report(
        &self,
        out: &mut dyn Write,
        dropped: crate::store::report::Removed,
        sessions_gone: usize,
        (pins_secs, set_by): (u64, &str),
        sizes: Option<(u64, u64)>,
    ) -> Result<()> {
        let r = Report {
            dry_run: self.dry_run,
            dropped,
            sessions_gone,
            pins_older_than_secs: pins_secs,
            pins_cutoff_set_by: set_by,
            runs_older_than_secs: self.runs_older_than.as_secs(),
            size_before: sizes.map(|s| s.0),
            size_after: sizes.map(|s| s.1),
        };
        serde_json::to_writer_pretty(&mut *out, &r)?;
        writeln!(out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cleanup_period_days() {
        assert_eq!(cleanup_days(r#"{"cleanupPeriodDays": 7}"#), Some(7));
        assert_eq!(cleanup_days(r#"{"cleanupPeriodDays": 0}"#), Some(0));
        assert_eq!(cleanup_days(r#"{"model": "x"}"#), None);
        assert_eq!(cleanup_days(r#"{"cleanupPeriodDays": "7"}"#), None);
        assert_eq!(cleanup_days(r#"{"cleanupPeriodDays": -1}"#), None);
        assert_eq!(cleanup_days("not json"), None);
    }

    #[test]
    fn span_prefers_the_flag_then_settings_then_30_days() {
        let t = tempfile::tempdir().unwrap();
        let flag = Duration::from_secs(60);
        assert_eq!(pin_span(Some(flag), Some(t.path())).0, flag);
        assert_eq!(
            pin_span(None, Some(t.path())).0,
            Duration::from_secs(30 * 86_400)
        );
        std::fs::write(
            t.path().join("settings.json"),
            r#"{"cleanupPeriodDays": 3}"#,
        )
        .unwrap();
        let (span, why) = pin_span(None, Some(t.path()));
        assert_eq!(span, Duration::from_secs(3 * 86_400));
        assert!(why.contains("settings.json"), "{why}");
        assert_eq!(pin_span(None, None).0, Duration::from_secs(30 * 86_400));
    }
}
