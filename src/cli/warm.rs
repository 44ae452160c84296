//! `warm`: the live CLIs kept for warm turns — list them (`status`, the
//! default) or end them (`stop [SESSION]`; without one, every process and
//! the keeper). `keeper` (hidden) is the keeper itself, which shims start.

use super::{duration, human, style::Style, Run};
use crate::warm::client::{self, Keeper};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;

/// Live CLIs kept for warm turns: list them, or end them.
#[derive(Args)]
pub struct Warm {
    #[command(subcommand)]
    action: Option<Action>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum Action {
    /// List the live CLIs (the default).
    Status,
    /// End the live CLI of SESSION (its id or a unique prefix; an error when
    /// it has none), or all of them and the keeper.
    Stop { session: Option<String> },
}

pub(super) fn connect() -> Result<Option<Keeper>> {
    let Some(dir) = crate::data_dir::DataDir::existing()? else {
        return Ok(None);
    };
    Ok(Keeper::connect(&dir, false))
}

impl Run for Warm {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        match &self.action {
            None | Some(Action::Status) => status(out, self.json),
            Some(Action::Stop { session }) => {
                if session.is_none() {
                    // Live CLIs that did not answer may be tried again.
                    if let Some(dir) = crate::data_dir::DataDir::existing()? {
                        crate::warm::unresponsive::forget_all(&dir);
                    }
                }
                let Some(mut k) = connect()? else {
                    if let Some(s) = session {
                        anyhow::bail!("no live CLI of session {s}: no keeper is running");
                    }
                    writeln!(out, "no keeper is running: nothing to stop")?;
                    return Ok(());
                };
                let Some(given) = session else {
                    let n = k.status()?.live.len();
                    k.stop(None)?;
                    writeln!(
                        out,
                        "ended {n} live CLI{}; the keeper exits",
                        if n == 1 { "" } else { "s" }
                    )?;
                    return Ok(());
                };
                // Only what runs can be ended, and said to be.
                let live = k.status()?.live;
                let ids: Vec<String> = live.iter().map(|l| l.session.clone()).collect();
                let s = super::id_prefix::resolve(given, &ids, "live CLI's session")
                    .map_err(|e| anyhow::anyhow!("{e} (see `claude-shim warm status`)"))?;
                let pid = live.iter().find(|l| l.session == s).map(|l| l.pid);
                k.stop(Some(s.clone()))?;
                let still = k
                    .status()?
                    .live
                    .iter()
                    .any(|l| l.session == s && l.state != "stopping");
                match still {
                    false => writeln!(out, "ended the live CLI of {s} (pid {})", pid.unwrap_or(0))?,
                    true => anyhow::bail!(
                        "the live CLI of {s} is answering a turn now; it was not ended (try again when it is idle)"
                    ),
                }
                Ok(())
            }
        }
    }
}

/// Binaries and scopes whose live CLI did not answer lately: their turns run
/// cold for a while.
fn silent() -> Vec<crate::warm::unresponsive::Silent> {
    match crate::data_dir::DataDir::existing() {
        Ok(Some(dir)) => crate::warm::unresponsive::list(&dir, crate::store::now()),
        _ => Vec::new(),
    }
}

fn status(out: &mut dyn Write, json: bool) -> Result<()> {
    let status = match connect()? {
        Some(mut k) => Some(k.status()?),
        None => None,
    };
    let silent = silent();
    if json {
        let doc = serde_json::json!({ "keeper": status, "unresponsive": silent });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
        return Ok(());
    }
    let width = super::style::terminal_width();
    for s in &silent {
        let until = s.since + crate::warm::unresponsive::FOR.as_secs() as i64;
        let until = crate::store::report::LocalTime::new()
            .and_then(|t| t.format("%H:%M", until))
            .unwrap_or_default();
        human::say(
            out,
            &format!(
                "warm turns off for {} in {} until {until}: {} (`claude-shim warm stop` tries again now)",
                s.binary, s.cwd, s.why
            ),
            width,
        )?;
    }
    let Some(s) = status else {
        human::say(
            out,
            &format!(
                "no keeper is running: no live CLIs (warm turns start one on the next managed turn{})",
                if crate::env::warm() {
                    ""
                } else {
                    "; they are off: CLAUDE_SHIM_WARM=0"
                }
            ),
            width,
        )?;
        return Ok(());
    };
    let style = Style::for_stdout();
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "keeper pid {}, {} of at most {} live CLIs, idle ones end after {}",
            s.pid,
            s.live.len(),
            s.max,
            duration::exact(s.ttl_secs)
        ))
    )?;
    if s.live.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        style.bold("session   state     turns  idle   age    memory  cwd")
    )?;
    for l in &s.live {
        writeln!(
            out,
            "{:<9} {:<9} {:>5}  {:<6} {:<6} {:>7}  {}",
            l.session.get(..8).unwrap_or(&l.session),
            l.state,
            l.turns,
            duration::short(l.idle_secs as i64),
            duration::short(l.age_secs as i64),
            l.rss_bytes
                .map(|b| human::bytes(b as i64))
                .unwrap_or_else(|| "?".into()),
            // The cells before it take 50 columns; the end of a path tells
            // directories apart.
            match width {
                Some(w) => human::tail(&l.cwd, w.saturating_sub(50).max(12)),
                None => l.cwd.clone(),
            }
        )?;
    }
    Ok(())
}

/// `claude-shim keeper`: serve until there is nothing to hold.
#[derive(Args)]
pub struct KeeperCmd;

impl Run for KeeperCmd {
    fn run(&self, _out: &mut dyn Write) -> Result<()> {
        let dir = crate::data_dir::DataDir::open()?;
        crate::warm::keeper::serve(client::config(&dir))
    }
}
