//! One live CLI of the keeper's: how it is started (through
//! `runner::detached`, with its caller's settings and none of its
//! descriptors), ended, and what it holds.

use super::*;

pub(super) fn ended(status: std::process::ExitStatus) -> Reply {
    use std::os::unix::process::ExitStatusExt;
    Reply::Ended {
        code: status.code(),
        signal: status.signal(),
    }
}

pub(super) fn pid(e: &Entry) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(e.child.id() as i32)
}

/// The session file of `e`, once there is one.
pub(super) fn session_file(e: &Entry) -> Option<PathBuf> {
    crate::sessions::find(e.config_dir.as_deref()?, &e.session)
}

/// Take back what `e`, killed mid-turn, wrote of its turn (see `hang_up`).
pub(super) fn undo_turn(e: &Entry) {
    let Some(file) = session_file(e) else {
        return;
    };
    // A turn the session holds whole stays: its caller may have had the
    // result (a streaming caller kills at the end of the reply), and the
    // next turn's lookup tells whether it continues from it.
    if crate::sessions::turn_finished_since(&file, e.lent_at).unwrap_or(true) {
        return;
    }
    match crate::sessions::undo_turn(&file, e.lent_at) {
        Ok(true) => crate::debug!("keeper: took back the abandoned turn of {}", e.session),
        Ok(false) => {}
        Err(why) => crate::error!(
            "keeper: taking back the abandoned turn of {}: {why}",
            e.session
        ),
    }
}

/// Close its stdin: the CLI finishes (writing its closing records) and exits.
pub(super) fn stop(e: &mut Entry) {
    drop(e.stdin.take());
    if !matches!(e.state, State::Stopping { .. }) {
        e.state = State::Stopping {
            since: Instant::now(),
        };
    }
}

pub(super) fn spawn(start: &Start) -> std::io::Result<Entry> {
    let mut cmd = Command::new(&start.program);
    cmd.args(&start.args)
        .env_clear()
        .envs(start.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&start.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The caller's umask, limits and niceness; none of our descriptors.
    crate::runner::detached::confine(
        &mut cmd,
        crate::runner::detached::Role::Cli(start.settings.clone()),
    );
    let mut child = cmd.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        return Err(std::io::Error::other("no pipes"));
    };
    let now = Instant::now();
    Ok(Entry {
        session: String::new(),
        head: None,
        key: String::new(),
        file_size: None,
        cwd: start.cwd.clone(),
        child,
        stdin: Some(stdin),
        stdout,
        stderr,
        state: State::Idle,
        started: now,
        last_used: now,
        turns: 0,
        leased: false,
        want_stop: false,
        began_fresh: !start.args.iter().any(|a| a == "--resume"),
        ready: false,
        config_dir: config_dir_of(&start.env),
        lent_at: None,
    })
}

/// The Claude config dir of a CLI started with `env` (as `env::claude_config_dir`
/// reads it from our own).
pub(super) fn config_dir_of(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    match var("CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => var("HOME").map(|h| PathBuf::from(h).join(".claude")),
    }
}

/// Resident memory of a process (Linux; elsewhere unknown).
pub(super) fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What a live CLI holds (measured on 2.1.330: ~215 MiB after ten turns).
pub(super) const TYPICAL_RSS: u64 = 256 << 20;
/// Free memory left to the machine: below it no live process is started,
/// and idle ones end.
pub(super) const RESERVE: u64 = 1 << 30;

/// The default bound on live processes (`CLAUDE_SHIM_WARM_MAX`): a few
/// conversations warm at once, as one person or one small server has.
pub const DEFAULT_MAX: usize = 4;

/// The default memory budget (`CLAUDE_SHIM_WARM_MEMORY`): an eighth of the
/// machine's memory, at most 1 GiB (four live CLIs).
pub fn default_memory() -> u64 {
    let budget = meminfo("MemTotal:").map_or(1 << 30, |total| total / 8);
    budget.min(1 << 30)
}

pub(super) struct Pool {
    pub(super) count: usize,
    pub(super) rss: u64,
}

/// Memory the machine can still give (Linux; elsewhere unknown).
pub(super) fn available_memory() -> Option<u64> {
    meminfo("MemAvailable:")
}

pub(super) fn meminfo(key: &str) -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with(key))?.to_owned();
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
