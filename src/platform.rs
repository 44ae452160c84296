//! The few calls only some systems have, each with a portable fallback:
//!
//! - a parent-death signal (Linux `PR_SET_PDEATHSIG`): without it a child
//!   of a killed shim still ends, when its pipes to the shim close;
//! - `splice(2)` (Linux) to move output in the kernel: without it, the
//!   plain read/write copy.
//!
//! `CLAUDE_SHIM_PLATFORM=portable` forces the fallbacks on Linux, so the
//! code other Unixes run is tested here too (CI runs the suite that way).

use nix::sys::signal::Signal;
use std::os::fd::BorrowedFd;

/// Whether the Linux-only paths are switched off. Read once per process;
/// async-signal-safe afterwards (a plain atomic load), so it may be asked
/// between fork and exec once it was asked before the fork.
pub fn portable() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let forced = crate::env::portable_platform();
            STATE.store(if forced { 2 } else { 1 }, Ordering::Relaxed);
            forced
        }
    }
}

/// Ask for `sig` when our parent dies, and die at once if it already has
/// (`parent` is who it was before the fork). Between fork and exec: only
/// async-signal-safe calls. A no-op where unsupported (see module docs).
pub fn die_with_parent(sig: Signal, parent: nix::unistd::Pid, portable: bool) -> nix::Result<()> {
    #[cfg(target_os = "linux")]
    if !portable {
        nix::sys::prctl::set_pdeathsig(sig)?;
        if nix::unistd::getppid() != parent {
            let _ = nix::sys::signal::raise(sig);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (sig, parent, portable);
    Ok(())
}

/// Whether process `pid` exists (signal 0: the kernel's word).
pub fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// What a kernel-side copy managed.
pub enum Spliced {
    /// EOF, or the reader is gone (EPIPE); this many bytes moved.
    Done(u64),
    /// The kernel cannot move this pair (or this platform cannot): copy by
    /// hand from here; this many bytes moved before that was known.
    Unsupported(u64),
}

/// Move everything from the pipe `from` to `to` in the kernel, until EOF.
pub fn splice_all(from: BorrowedFd<'_>, to: BorrowedFd<'_>) -> Spliced {
    #[cfg(target_os = "linux")]
    if !portable() {
        use nix::fcntl::{splice, SpliceFFlags};
        let mut moved = 0u64;
        loop {
            match splice(from, None, to, None, 1 << 20, SpliceFFlags::SPLICE_F_MOVE) {
                Ok(0) => return Spliced::Done(moved),
                Ok(n) => moved += n as u64,
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
                Err(nix::errno::Errno::EPIPE) => return Spliced::Done(moved),
                Err(_) => return Spliced::Unsupported(moved),
            }
        }
    }
    let _ = (from, to);
    Spliced::Unsupported(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn splice_moves_a_pipe_or_says_it_cannot() {
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let (r2, w2) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let mut w = std::fs::File::from(w);
        w.write_all(b"hello").unwrap();
        drop(w);
        match splice_all(r.as_fd(), w2.as_fd()) {
            Spliced::Done(n) => {
                drop(w2);
                let mut got = String::new();
                std::fs::File::from(r2).read_to_string(&mut got).unwrap();
                assert_eq!((n, got.as_str()), (5, "hello"));
            }
            Spliced::Unsupported(n) => assert!(portable() || cfg!(not(target_os = "linux")), "{n}"),
        }
    }
}
