//! `forget`: drop pins so the next turn of those conversations runs fresh.
//! Claude Code's own session files are not touched.

use super::command::Run;
use super::store_access::{canonical_dir, existing_store};
use crate::store::report::Removed;
use anyhow::{bail, Result};
use clap::{ArgGroup, Args};
use std::io::Write;
use std::path::PathBuf;

/// Forget pinned conversations (the shim's records only; Claude Code's
/// session files stay). Their next turn runs fresh.
#[derive(Args)]
#[command(group(ArgGroup::new("what").required(true).args(["cwd", "all", "session"])))]
pub struct Forget {
    /// Every conversation pinned in this directory (the current one if no DIR is given).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub cwd: Option<PathBuf>,
    /// Every conversation.
    #[arg(long)]
    pub all: bool,
    /// One conversation, by session id or any unique prefix of it (see `claude-shim sessions`).
    pub session: Option<String>,
    /// Machine-readable output: what was removed.
    #[arg(long)]
    pub json: bool,
}

fn summary(r: Removed) -> String {
    format!("forgot {} pin(s) of {} conversation(s)", r.pins, r.sessions)
}

impl Run for Forget {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let Some(mut store) = existing_store()? else {
            if let Some(s) = &self.session {
                bail!("no pins for session {s} (nothing is recorded yet)");
            }
            match self.json {
                true => writeln!(out, "{}", serde_json::json!(Removed::default()))?,
                false => writeln!(out, "nothing to forget (nothing is recorded yet)")?,
            }
            return Ok(());
        };
        let removed = if self.all {
            store.forget_all()?
        } else if let Some(dir) = &self.cwd {
            store.forget_cwd(&canonical_dir(dir))?
        } else if let Some(given) = &self.session {
            let pinned = store.pinned_sessions()?;
            let s = &super::id_prefix::resolve(given, &pinned, "pinned session")
                .map_err(|e| anyhow::anyhow!("{e} (see `claude-shim sessions`)"))?;
            let r = store.forget_sessions(std::slice::from_ref(s))?;
            if r.pins == 0 && r.sessions == 0 {
                bail!("no pins for session {s} (see `claude-shim pins`)");
            }
            r
        } else {
            bail!("say what to forget: --cwd [DIR], --all or a SESSION id");
        };
        match (self.json, &self.cwd) {
            (true, _) => writeln!(out, "{}", serde_json::json!(removed))?,
            // A mistyped directory forgets nothing: say where to look.
            (false, Some(dir)) if removed.pins == 0 => writeln!(
                out,
                "no pins for {}: nothing forgotten (`claude-shim pins` lists them)",
                canonical_dir(dir)
            )?,
            (false, _) => writeln!(out, "{}", summary(removed))?,
        }
        Ok(())
    }
}
