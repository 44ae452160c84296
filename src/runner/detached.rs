//! Processes that outlive the call that started them — the keeper, and the
//! live and ready CLIs it holds — are spawned through [`confine`], with
//! exactly what they need of a call and nothing more:
//!
//! - **descriptors**: fds 0–2 as the spawner sets them; every other
//!   descriptor is closed at exec, whatever its `FD_CLOEXEC` flag. A caller's
//!   extra inheritable copies of its pipes (bash's process substitution,
//!   uvloop's copies of a child's stdout and stderr), a listening socket or a
//!   lock file would otherwise stay open for minutes, and a caller reading to
//!   end-of-file would wait for them;
//! - **process settings**: the umask, resource limits and niceness of the
//!   caller the process will serve ([`Settings`], taken by that caller and
//!   sent along), not those of whichever caller started the keeper;
//! - signal dispositions and mask back to their defaults.
//!
//! A setting that cannot be applied (a limit above the keeper's hard limit,
//! a niceness only root may take) fails the spawn: the turn then runs cold,
//! where the CLI has the caller's own settings.

use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A caller's process settings, as a process serving it must have them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Settings {
    pub umask: u32,
    /// Niceness (`getpriority`), `None` when unknown.
    pub nice: Option<i32>,
    /// `(resource, soft, hard)` for each limit this platform has.
    pub limits: Vec<(i32, u64, u64)>,
}

/// The resource limits a process inherits (`RLIMIT_*`).
#[cfg(target_os = "linux")]
const RESOURCES: &[i32] = &[
    nix::libc::RLIMIT_CPU as i32,
    nix::libc::RLIMIT_FSIZE as i32,
    nix::libc::RLIMIT_DATA as i32,
    nix::libc::RLIMIT_STACK as i32,
    nix::libc::RLIMIT_CORE as i32,
    nix::libc::RLIMIT_RSS as i32,
    nix::libc::RLIMIT_NPROC as i32,
    nix::libc::RLIMIT_NOFILE as i32,
    nix::libc::RLIMIT_MEMLOCK as i32,
    nix::libc::RLIMIT_AS as i32,
    nix::libc::RLIMIT_LOCKS as i32,
    nix::libc::RLIMIT_SIGPENDING as i32,
    nix::libc::RLIMIT_MSGQUEUE as i32,
    nix::libc::RLIMIT_NICE as i32,
    nix::libc::RLIMIT_RTPRIO as i32,
    nix::libc::RLIMIT_RTTIME as i32,
];
#[cfg(not(target_os = "linux"))]
const RESOURCES: &[i32] = &[
    nix::libc::RLIMIT_CPU as i32,
    nix::libc::RLIMIT_FSIZE as i32,
    nix::libc::RLIMIT_DATA as i32,
    nix::libc::RLIMIT_STACK as i32,
    nix::libc::RLIMIT_CORE as i32,
    nix::libc::RLIMIT_NOFILE as i32,
    nix::libc::RLIMIT_AS as i32,
];

impl Settings {
    /// This process's settings (the caller's: the shim changes none of them
    /// before a turn).
    pub fn of_this_process() -> Settings {
        // umask(2) only sets: set, then put back at once.
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
        nix::sys::stat::umask(old);
        let limits = RESOURCES
            .iter()
            .filter_map(|&r| {
                let mut lim = nix::libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: getrlimit writes into `lim`, which lives here.
                #[allow(clippy::useless_conversion)]
                let ok = unsafe { nix::libc::getrlimit(r as _, &mut lim) } == 0;
                ok.then_some((r, lim.rlim_cur, lim.rlim_max))
            })
            .collect();
        Settings {
            umask: old.bits() as u32,
            nice: nice(),
            limits,
        }
    }

    /// A short hash of the settings, for keys.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(self).unwrap_or_default());
        hex::encode(&h.finalize()[..8])
    }

    /// Apply in a forked child. Async-signal-safe: plain system calls.
    fn apply(&self) -> std::io::Result<()> {
        nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
            self.umask as nix::libc::mode_t,
        ));
        for &(r, soft, hard) in &self.limits {
            let lim = nix::libc::rlimit {
                rlim_cur: soft as nix::libc::rlim_t,
                rlim_max: hard as nix::libc::rlim_t,
            };
            // SAFETY: setrlimit reads `lim`, which lives here.
            #[allow(clippy::useless_conversion)]
            if unsafe { nix::libc::setrlimit(r as _, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(n) = self.nice {
            // SAFETY: plain system call.
            #[allow(clippy::useless_conversion)]
            if unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS as _, 0, n) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// This process's niceness.
fn nice() -> Option<i32> {
    nix::errno::Errno::clear();
    // SAFETY: plain system call; -1 is a valid answer, told apart by errno.
    #[allow(clippy::useless_conversion)]
    let n = unsafe { nix::libc::getpriority(nix::libc::PRIO_PROCESS as _, 0) };
    (n != -1 || nix::errno::Errno::last_raw() == 0).then_some(n)
}

/// The descriptor a starting keeper finds its ready pipe on (see
/// `Role::Keeper`).
pub const READY_FD: i32 = 3;

/// How a process that outlives the call starts.
pub enum Role {
    /// The keeper: in a session of its own (no terminal's signals reach it),
    /// with the write end `ready` of a pipe as fd [`READY_FD`]: it writes
    /// there once it listens, so the shim that started it waits for that
    /// instead of polling for the socket.
    Keeper { ready: std::os::fd::RawFd },
    /// A live or ready CLI: with its caller's `Settings` (it ends once the
    /// keeper is gone: its stdin closes).
    Cli(Settings),
}

/// Spawn rules for a process that outlives the call (see module docs): only
/// fds 0–2 reach it, its signals are reset, and as its [`Role`] says.
pub fn confine(cmd: &mut Command, role: Role) {
    let (settings, ready) = match role {
        Role::Keeper { ready } => (None, Some(ready)),
        Role::Cli(s) => (Some(s), None),
    };
    // SAFETY: only async-signal-safe calls (sigaction, sigprocmask, fcntl,
    // dup2, close_range, getrlimit, umask, setrlimit, setpriority, setsid)
    // run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            super::signals::reset_for_child()?;
            let mut first = 3;
            if let Some(fd) = ready {
                nix::unistd::setsid()?;
                // As fd 3, kept across exec (dup2 clears close-on-exec; a
                // descriptor already there keeps its flags: cleared here).
                match fd == READY_FD {
                    true => nix::libc::fcntl(READY_FD, nix::libc::F_SETFD, 0),
                    false => nix::libc::dup2(fd, READY_FD),
                };
                first = READY_FD + 1;
            }
            // Before the limits change: the fallback walks up to the
            // descriptor limit we have, which the caller's may lower.
            close_on_exec_from(first);
            if let Some(s) = &settings {
                s.apply()?;
            }
            Ok(())
        });
    }
}

/// Mark every descriptor from `first` up close-on-exec (std's own error pipe
/// is already). Between fork and exec: no allocation.
fn close_on_exec_from(first: i32) {
    #[cfg(target_os = "linux")]
    if !crate::platform::portable() {
        // close_range(first, ~0, CLOSE_RANGE_CLOEXEC) (Linux 5.11).
        const CLOSE_RANGE_CLOEXEC: nix::libc::c_uint = 1 << 2;
        // SAFETY: a plain system call on descriptors this process owns.
        let done = unsafe {
            nix::libc::syscall(
                nix::libc::SYS_close_range,
                first as nix::libc::c_uint,
                nix::libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            )
        } == 0;
        if done {
            return;
        }
    }
    // Elsewhere (and on older kernels): every descriptor up to the limit.
    let mut lim = nix::libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into `lim`.
    let top = match unsafe { nix::libc::getrlimit(nix::libc::RLIMIT_NOFILE, &mut lim) } {
        0 => lim.rlim_cur.min(1 << 20) as i32,
        _ => 1 << 16,
    };
    for fd in first..top {
        // SAFETY: fcntl on a descriptor number; EBADF for those not open.
        unsafe {
            let flags = nix::libc::fcntl(fd, nix::libc::F_GETFD);
            if flags >= 0 && flags & nix::libc::FD_CLOEXEC == 0 {
                nix::libc::fcntl(fd, nix::libc::F_SETFD, flags | nix::libc::FD_CLOEXEC);
            }
        }
    }
}
