//! `warm`: the live CLIs kept for warm turns — list them (`status`, the
//! default) or end them (`stop [SESSION]`; without one, every process and
//! the keeper). `keeper` (hidden) is the keeper itself, which shims start.

use super::command::Run;
use super::{human, style::Style};
use crate::text::duration;
use crate::warm::client::Keeper;
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
                let Some(given) = session else {
                    return stop_all(out);
                };
                let Some(mut k) = connect()? else {
                    anyhow::bail!("no live CLI of session {given}: no keeper is running");
                };
                // Only what runs can be ended, and said to be.
                let live = k.status()?.live;
                let ids: Vec<String> = live.iter().map(|l| l.session.clone()).collect();
                let s = super::id_prefix::resolve(given, &ids, "live CLI's session")
                    .map_err(|e| anyhow::anyhow!("{e} (see `claude-shim warm status`)"))?;
                let pid = live.iter().find(|l| l.session == s).map(|l| l.pid);
                k.stop(Some(s.clone()))?;
                let still = k.status()?.live.iter().any(|l| {
                    l.session == s && l.state != crate::warm::protocol::LiveState::Stopping
                });
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

/// How long `warm stop` waits for the keeper and its CLIs to end (a turn
/// being answered finishes first), before it ends them itself.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `warm stop`: every live CLI and the keeper — and keepers no socket leads
/// to any more (their data dir deleted or replaced) — gone when it returns.
fn stop_all(out: &mut dyn Write) -> Result<()> {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let mut keepers: Vec<i32> = Vec::new();
    let mut clis: Vec<i32> = Vec::new();
    // Answering a turn: it ends after it (its caller holds its stdin).
    let mut busy = 0;
    if let Some(mut k) = connect()? {
        let s = k.status()?;
        keepers.push(s.pid as i32);
        for l in &s.live {
            match l.state {
                crate::warm::protocol::LiveState::Busy => busy += 1,
                _ => clis.push(l.pid),
            }
        }
        k.stop(None)?;
    }
    if let Some(path) = crate::data_dir::configured() {
        for pid in orphaned_keepers(&path) {
            if !keepers.contains(&pid) {
                clis.extend(children(pid));
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                keepers.push(pid);
            }
        }
    }
    if keepers.is_empty() {
        writeln!(out, "no keeper is running: nothing to stop")?;
        return Ok(());
    }
    let gone = |pids: &[i32]| pids.iter().all(|&p| !crate::platform::alive(p));
    let wait = |pids: &[i32]| {
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while !gone(pids) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        gone(pids)
    };
    let mut forced = 0;
    if !wait(&keepers) {
        // Stopped (a debugger, a frozen container) or wedged: its CLIs end
        // when it does (their stdin closes).
        for &p in &keepers {
            forced += usize::from(kill(Pid::from_raw(p), Signal::SIGKILL).is_ok());
        }
        wait(&keepers);
    }
    if !wait(&clis) {
        for &p in &clis {
            forced += usize::from(kill(Pid::from_raw(p), Signal::SIGKILL).is_ok());
        }
    }
    let n = clis.len();
    writeln!(
        out,
        "ended {n} live CLI{} and {} keeper{}{}{}",
        if n == 1 { "" } else { "s" },
        keepers.len(),
        if keepers.len() == 1 { "" } else { "s" },
        match forced {
            0 => String::new(),
            f => format!(" ({f} did not end when asked and were killed)"),
        },
        match busy {
            0 => String::new(),
            b => format!(
                "; {b} answering a turn end{} after it",
                if b == 1 { "s" } else { "" }
            ),
        }
    )?;
    Ok(())
}

/// The children of `pid` (Linux `/proc`; none elsewhere).
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Keepers of ours for the data dir `path` that its socket no longer leads
/// to: running in that directory (a keeper's working directory is its data
/// dir) after it was deleted or replaced. Linux (`/proc`); none elsewhere.
fn orphaned_keepers(path: &std::path::Path) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let here = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let deleted = format!("{} (deleted)", path.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let proc_dir = e.path();
            if std::fs::metadata(&proc_dir).ok()?.uid() != me || pid == std::process::id() as i32 {
                return None;
            }
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            let mut args = cmdline.split(|&b| b == 0);
            let exe = args.next()?;
            let is_keeper = memchr::memmem::find(exe, b"claude-shim").is_some()
                && args.next() == Some(b"keeper".as_slice());
            if !is_keeper {
                return None;
            }
            let cwd = std::fs::read_link(proc_dir.join("cwd")).ok()?;
            // Its directory deleted, or replaced by another of the same name.
            let orphan = cwd.to_string_lossy() == deleted
                || (cwd == path
                    && std::fs::metadata(proc_dir.join("cwd"))
                        .ok()
                        .map(|m| (m.dev(), m.ino()))
                        != here);
            orphan.then_some(pid)
        })
        .collect()
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
        let until = crate::store::sqlite::LocalTime::new()
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
    render(out, &s, Style::for_stdout(), width)?;
    Ok(())
}

/// The keeper and its live CLIs, fitted to `width` columns (`None`: a
/// pipe, full lines): the keeper line wrapped as prose, the memory column
/// as wide as its longest value, the cwd's end in what is left.
fn render(
    out: &mut dyn Write,
    s: &crate::warm::protocol::Status,
    style: Style,
    width: Option<usize>,
) -> std::io::Result<()> {
    let keeper = format!(
        "keeper pid {}, {} of at most {} live CLIs, idle ones end after {}",
        s.pid,
        s.live.len(),
        s.max,
        duration::exact(s.ttl_secs)
    );
    for l in human::hanging("", &keeper, width) {
        writeln!(out, "{}", style.bold(&l))?;
    }
    if s.live.is_empty() {
        return Ok(());
    }
    let memory: Vec<String> = s
        .live
        .iter()
        .map(|l| l.rss_bytes.map_or("?".into(), |b| human::bytes(b as i64)))
        .collect();
    let mem_w = memory
        .iter()
        .map(|m| m.chars().count())
        .fold("memory".len(), usize::max);
    // session, state, turns, idle and age take 41 columns with their gaps.
    let before_cwd = 41 + mem_w + 2;
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "{:<9} {:<9} {:>5}  {:<6} {:<6} {:>mem_w$}  cwd",
            "session", "state", "turns", "idle", "age", "memory"
        ))
    )?;
    for (l, mem) in s.live.iter().zip(&memory) {
        writeln!(
            out,
            "{:<9} {:<9} {:>5}  {:<6} {:<6} {mem:>mem_w$}  {}",
            l.session.get(..8).unwrap_or(&l.session),
            l.state,
            l.turns,
            duration::short(l.idle_secs as i64),
            duration::short(l.age_secs as i64),
            // The end of a path tells directories apart.
            match width {
                Some(w) => human::tail(&l.cwd, w.saturating_sub(before_cwd).max(12)),
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
        crate::warm::keeper::serve(crate::warm::keeper::Config::from_env(&dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warm::protocol::{Live, Status};

    fn live(session: &str, rss: Option<u64>, cwd: &str) -> Live {
        Live {
            session: session.into(),
            pid: 42,
            state: crate::warm::protocol::LiveState::Idle,
            turns: 3,
            cwd: cwd.into(),
            idle_secs: 90,
            age_secs: 4000,
            rss_bytes: rss,
        }
    }

    fn text(s: &Status, width: Option<usize>) -> String {
        let mut out = Vec::new();
        render(&mut out, s, Style::PLAIN, width).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn columns_line_up_and_the_keeper_line_wraps() {
        let deep = "/home/u/work/clients/acme/a-rather-long-project-name/app";
        let s = Status {
            pid: 4242,
            build: "b".into(),
            max: 4,
            memory: 0,
            ttl_secs: 1800,
            counters: Default::default(),
            live: vec![
                live("6e8e0435-8e12", Some(241_696_768), deep),
                live("0b12cd34-3333", None, "/w"),
                live("ea76abf8-1111", Some(1000), "/x"),
            ],
        };
        for width in [None, Some(80), Some(50)] {
            let t = text(&s, width);
            let table: Vec<&str> = t
                .lines()
                .skip_while(|l| !l.starts_with("session"))
                .collect();
            let at = table[0].find("cwd").expect("a cwd header");
            for row in &table[1..] {
                // Every cwd starts under its header, the memory cell ends before it.
                let cwd = row.char_indices().nth(at).map(|(i, _)| &row[i..]);
                assert!(
                    cwd.is_some_and(|c| c.starts_with(['/', '…'])),
                    "{width:?}: {row}\n{t}"
                );
                assert_eq!(&row[at - 2..at], "  ", "{width:?}: {row}");
            }
            assert!(t.contains("230.5 MiB  "), "{t}");
        }
        let t = text(&s, Some(80));
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // Below the keeper line's length, it wraps as prose does.
        let t = text(&s, Some(50));
        let keeper: Vec<&str> = t
            .lines()
            .take_while(|l| !l.starts_with("session"))
            .collect();
        assert_eq!(keeper.len(), 2, "{t}");
        assert!(keeper.iter().all(|l| l.chars().count() <= 50), "{t}");
    }
}
