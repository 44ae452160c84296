//! What the pool needs of the processes it holds, behind two small traits:
//! a [`Spawn`] starts a CLI (and says how much memory the machine has
//! free), a [`Child`] is one started. [`Processes`] is the real thing: a
//! CLI spawned through `runner::detached`, with its caller's settings and
//! none of our descriptors. The pool's tests hand it fakes instead.

use super::config::meminfo;
use crate::runner::detached::{confine, Role};
use crate::warm::protocol::Start;
use std::os::fd::OwnedFd;
use std::process::{Command, ExitStatus, Stdio};

/// Starts the CLIs the keeper holds.
pub trait Spawn {
    /// A CLI started as `start` says, its stdin, stdout and stderr piped
    /// to us.
    fn spawn(&self, start: &Start) -> std::io::Result<Spawned>;
    /// Memory the machine can still give (`None`: unknown).
    fn available_memory(&self) -> Option<u64>;
}

/// One CLI the keeper started.
pub trait Child {
    fn pid(&self) -> u32;
    /// SIGKILL (nothing once it has been reaped).
    fn kill(&mut self);
    /// SIGTERM.
    fn terminate(&mut self);
    /// How it ended, once it has (and reaped).
    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>>;
    /// Its resident memory (`None`: unknown).
    fn rss(&self) -> Option<u64>;
}

/// A started CLI and our ends of its pipes.
pub struct Spawned {
    pub child: Box<dyn Child>,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Real processes.
pub struct Processes;

impl Spawn for Processes {
    fn spawn(&self, start: &Start) -> std::io::Result<Spawned> {
        let mut cmd = Command::new(&start.program);
        cmd.args(&start.args)
            .env_clear()
            .envs(start.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&start.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The caller's umask, limits and niceness; none of our descriptors.
        confine(&mut cmd, Role::Cli(start.settings.clone()));
        let mut child = cmd.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(std::io::Error::other("no pipes"));
        };
        Ok(Spawned {
            child: Box::new(Process(child)),
            stdin: stdin.into(),
            stdout: stdout.into(),
            stderr: stderr.into(),
        })
    }

    fn available_memory(&self) -> Option<u64> {
        meminfo("MemAvailable:")
    }
}

struct Process(std::process::Child);

impl Child for Process {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
    }

    fn terminate(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.0.try_wait()
    }

    fn rss(&self) -> Option<u64> {
        rss(self.0.id())
    }
}

/// Resident memory of a process (Linux; elsewhere unknown).
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
