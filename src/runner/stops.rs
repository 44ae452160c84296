//! When the caller stops the shim, the CLIs it started stop too.
//!
//! Stopping `claude` (SIGSTOP to the pid the caller started, or a job
//! control stop of a group the CLI is not in: a warm turn's CLI is the
//! keeper's) stops the CLI itself when there is no shim. With a shim the CLI
//! is another process and would go on calling the model while the caller has
//! the call stopped. A stopped process can do nothing, so a small watcher
//! process, forked at the first CLI the turn starts, looks at the shim's
//! state every [`TICK`]: stopped, it stops the CLIs; running again, it
//! continues those it stopped. The shim tells it which pids are running over
//! a pipe; the pipe's end (the shim exited) ends it.
//!
//! Linux (`/proc/PID/stat`); elsewhere no watcher starts.

use nix::libc;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// How often the watcher looks: the time a stopped caller's CLI may still
/// run.
pub const TICK: Duration = Duration::from_millis(20);

/// The watcher's end of the shim: pids to add (positive) or remove
/// (negative), 4 bytes each.
pub struct Watcher {
    to: OwnedFd,
}

impl Watcher {
    /// Fork the watcher of this process (`None`: no `/proc`, or the fork
    /// failed: stops then reach only the CLIs in the caller's group).
    pub fn start() -> Option<Watcher> {
        let shim = std::process::id() as i32;
        let path = std::ffi::CString::new(format!("/proc/{shim}/stat")).ok()?;
        if std::fs::metadata("/proc/self/stat").is_err() {
            return None;
        }
        // Neither end may reach a CLI (a copy of ours would keep it open).
        let (from, to) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
        // SAFETY: the child runs only async-signal-safe calls (`watch`) and
        // exits with `_exit`; it allocates nothing and takes no lock.
        match unsafe { nix::unistd::fork() }.ok()? {
            nix::unistd::ForkResult::Child => {
                let from = from.as_raw_fd();
                // SAFETY: see above.
                unsafe { watch(shim, path.as_ptr(), from) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(from);
                // Reaped by nobody else: let init have it once it ends.
                let _ = child;
                Some(Watcher { to })
            }
        }
    }

    /// `pid` runs for the turn.
    pub fn running(&self, pid: i32) {
        self.send(pid);
    }

    /// `pid` ended (reaped).
    pub fn ended(&self, pid: i32) {
        self.send(-pid);
    }

    fn send(&self, v: i32) {
        let _ = nix::unistd::write(&self.to, &v.to_ne_bytes());
    }
}

/// The watcher's loop, in the forked child. Only raw system calls: the fork
/// of a threaded process may have left any lock held.
unsafe fn watch(shim: i32, stat: *const libc::c_char, from: i32) -> ! {
    // Nothing of the shim's but the pipe, moved to 0: the caller's output
    // must end when the shim's does, and our copy of the pipe's other end
    // would hide its end.
    if from != 0 && libc::dup2(from, 0) != 0 {
        libc::_exit(1);
    }
    let from = 0;
    close_from(1);
    let mut pids = [0i32; 32];
    let mut stopped = false;
    let mut pfd = libc::pollfd {
        fd: from,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        pfd.revents = 0;
        let n = libc::poll(&mut pfd, 1, TICK.as_millis() as i32);
        if n > 0 {
            let mut buf = [0u8; 4 * 32];
            let got = libc::read(from, buf.as_mut_ptr().cast(), buf.len());
            if got <= 0 {
                // The shim is gone: leave nothing stopped behind.
                if stopped {
                    signal_all(&pids, libc::SIGCONT);
                }
                libc::_exit(0);
            }
            for word in buf[..got as usize].chunks_exact(4) {
                let v = i32::from_ne_bytes([word[0], word[1], word[2], word[3]]);
                note(&mut pids, v);
                if v > 0 && stopped {
                    libc::kill(v, libc::SIGSTOP);
                }
            }
        }
        if libc::getppid() != shim {
            libc::_exit(0);
        }
        match (is_stopped(stat), stopped) {
            (Some(true), false) => {
                signal_all(&pids, libc::SIGSTOP);
                stopped = true;
            }
            (Some(false), true) => {
                signal_all(&pids, libc::SIGCONT);
                stopped = false;
            }
            _ => {}
        }
    }
}

/// Close every descriptor from `first` up: one `close_range` (Linux 5.9),
/// else each up to the descriptor limit.
unsafe fn close_from(first: i32) {
    #[cfg(target_os = "linux")]
    if libc::syscall(
        libc::SYS_close_range,
        first as libc::c_uint,
        libc::c_uint::MAX,
        0,
    ) == 0
    {
        return;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let top = match libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) {
        0 => lim.rlim_cur.min(1 << 20) as i32,
        _ => 1 << 16,
    };
    for fd in first..top {
        libc::close(fd);
    }
}

/// Add a pid (positive) or remove one (negative).
fn note(pids: &mut [i32], v: i32) {
    if v > 0 {
        if let Some(slot) = pids.iter_mut().find(|p| **p == 0) {
            *slot = v;
        }
    } else if let Some(slot) = pids.iter_mut().find(|p| **p == -v) {
        *slot = 0;
    }
}

unsafe fn signal_all(pids: &[i32], sig: i32) {
    for &p in pids.iter().filter(|&&p| p > 0) {
        libc::kill(p, sig);
    }
}

/// Whether the shim is stopped (state `T` in `/proc/PID/stat`, after the
/// command name's closing parenthesis).
unsafe fn is_stopped(stat: *const libc::c_char) -> Option<bool> {
    let fd = libc::open(stat, libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    if n <= 0 {
        return None;
    }
    state(&buf[..n as usize]).map(|s| s == b'T')
}

/// The state letter of a `/proc/PID/stat` line.
fn state(line: &[u8]) -> Option<u8> {
    let close = line.iter().rposition(|&b| b == b')')?;
    line.get(close + 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_letter_follows_the_last_parenthesis() {
        assert_eq!(state(b"12 (claude) S 1 12"), Some(b'S'));
        assert_eq!(state(b"12 (a) b) T 1 12"), Some(b'T'), "a name with ')'");
        assert_eq!(state(b"12 (x"), None);
    }

    #[test]
    fn pids_are_noted_and_forgotten() {
        let mut pids = [0i32; 3];
        note(&mut pids, 7);
        note(&mut pids, 8);
        note(&mut pids, -7);
        assert_eq!(pids, [0, 8, 0]);
        note(&mut pids, 9);
        assert_eq!(pids, [9, 8, 0]);
    }
}
