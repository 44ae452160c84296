//! A caller at a terminal. The CLI decides things by `isatty` (it shows the
//! cursor at the end, repeats error lines, sanitises what it prints), so a
//! stream the caller has on a terminal reaches the CLI as a terminal: a
//! pseudo-terminal made like the caller's (its modes and size), whose master
//! the shim reads and holds like a pipe, and copies to the caller's terminal.
//!
//! The pseudo-terminal does no output processing (`OPOST` off): the caller's
//! own terminal does it when the shim writes there, once, as it would for
//! the CLI's own writes. Its size follows the caller's (`SIGWINCH`). When
//! stdout and stderr are the same terminal the CLI gets one pseudo-terminal
//! for both, so their bytes keep the order they had.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// The caller's output streams, and which are terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub stdout: bool,
    pub stderr: bool,
    /// Both are terminals, and the same one.
    pub same: bool,
}

impl Caller {
    /// Whether fds 1 and 2 of this process are terminals.
    pub fn now() -> Caller {
        let tty = |fd| nix::unistd::isatty(fd).unwrap_or(false);
        let (stdout, stderr) = (tty(1), tty(2));
        let same = stdout && stderr && {
            let dev = |fd| nix::sys::stat::fstat(fd).map(|s| s.st_rdev).ok();
            dev(1).is_some() && dev(1) == dev(2)
        };
        Caller {
            stdout,
            stderr,
            same,
        }
    }

    pub fn any(self) -> bool {
        self.stdout || self.stderr
    }
}

/// A pseudo-terminal for the CLI: it writes to `slave`, the shim reads
/// `master`.
pub struct Pty {
    pub master: OwnedFd,
    pub slave: OwnedFd,
}

/// The terminals a run gives the CLI in place of pipes.
#[derive(Default)]
pub struct Ptys {
    pub out: Option<Pty>,
    /// `None` with `out` set and `Caller::same`: stderr goes to `out`'s.
    pub err: Option<Pty>,
    pub shared: bool,
}

impl Ptys {
    /// Pseudo-terminals like the caller's terminals; none where a stream is
    /// not one.
    pub fn like(caller: Caller) -> std::io::Result<Ptys> {
        let out = caller.stdout.then(|| like_fd(1)).transpose()?;
        let shared = caller.same && out.is_some();
        let err = (caller.stderr && !shared).then(|| like_fd(2)).transpose()?;
        Ok(Ptys { out, err, shared })
    }
}

/// A pseudo-terminal with `fd`'s modes (output processing off) and size,
/// its ends closed on exec (the child gets its own copy of the slave).
fn like_fd(fd: RawFd) -> std::io::Result<Pty> {
    use nix::sys::termios::{tcgetattr, OutputFlags};
    // SAFETY: fds 1 and 2 stay open for the life of the process.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut modes = tcgetattr(borrowed)?;
    modes.output_flags.remove(OutputFlags::OPOST);
    let size = size_of(fd);
    let pty = nix::pty::openpty(size.as_ref(), Some(&modes))?;
    for end in [&pty.master, &pty.slave] {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag};
        fcntl(end.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok(Pty {
        master: pty.master,
        slave: pty.slave,
    })
}

nix::ioctl_read_bad!(get_size, nix::libc::TIOCGWINSZ, nix::pty::Winsize);
nix::ioctl_write_ptr_bad!(set_size, nix::libc::TIOCSWINSZ, nix::pty::Winsize);

fn size_of(fd: RawFd) -> Option<nix::pty::Winsize> {
    let mut size = nix::pty::Winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one Winsize where it points.
    unsafe { get_size(fd, &mut size) }.ok().map(|_| size)
}

/// The masters of the running CLI's terminals, each with the caller's fd
/// whose size it follows.
static FOLLOWING: Mutex<Vec<(RawFd, OwnedFd)>> = Mutex::new(Vec::new());

/// While the CLI runs, its terminals take the size of the caller's.
pub fn follow(ptys: &Ptys) {
    let mut following = FOLLOWING.lock().unwrap_or_else(|p| p.into_inner());
    following.clear();
    for (fd, pty) in [(1, &ptys.out), (2, &ptys.err)] {
        if let Some(master) = pty.as_ref().and_then(|p| p.master.try_clone().ok()) {
            following.push((fd, master));
        }
    }
}

/// The run ended: nothing to resize.
pub fn unfollow() {
    FOLLOWING.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The caller's terminal changed size (`SIGWINCH`, before it is relayed to
/// the CLI): so do the CLI's.
pub fn resized() {
    resize(&FOLLOWING.lock().unwrap_or_else(|p| p.into_inner()));
}

fn resize(following: &[(RawFd, OwnedFd)]) {
    for (fd, master) in following {
        if let Some(size) = size_of(*fd) {
            // SAFETY: TIOCSWINSZ reads one Winsize from where it points.
            let _ = unsafe { set_size(master.as_fd().as_raw_fd(), &size) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A terminal to stand for the caller's.
    fn caller_terminal(rows: u16) -> nix::pty::OpenptyResult {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        nix::pty::openpty(Some(&size), None).unwrap()
    }

    #[test]
    fn a_pty_like_a_terminal_has_its_size_and_passes_bytes_unprocessed() {
        let caller = caller_terminal(33);
        let pty = like_fd(caller.slave.as_raw_fd()).unwrap();
        let size = size_of(pty.slave.as_raw_fd()).unwrap();
        assert_eq!((size.ws_row, size.ws_col), (33, 100));
        // What the CLI writes reaches the master as written: no "\r\n".
        let mut slave = std::fs::File::from(pty.slave.try_clone().unwrap());
        slave.write_all(b"one\ntwo\n").unwrap();
        let mut master = std::fs::File::from(pty.master);
        let mut got = [0u8; 8];
        master.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"one\ntwo\n");
        // The caller's terminal, processing output as it was made to, turns
        // the same bytes into what a terminal shows.
        let mut theirs = std::fs::File::from(caller.slave);
        theirs.write_all(b"one\n").unwrap();
        let mut shown = [0u8; 5];
        std::fs::File::from(caller.master)
            .read_exact(&mut shown)
            .unwrap();
        assert_eq!(&shown, b"one\r\n");
    }

    #[test]
    fn the_ptys_follow_the_callers_size() {
        let caller = caller_terminal(20);
        let pty = like_fd(caller.slave.as_raw_fd()).unwrap();
        let mine = pty.slave.as_raw_fd();
        let following = [(caller.slave.as_raw_fd(), pty.master.try_clone().unwrap())];
        let bigger = nix::pty::Winsize {
            ws_row: 50,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        unsafe { set_size(caller.master.as_raw_fd(), &bigger) }.unwrap();
        resize(&following);
        let size = size_of(mine).unwrap();
        assert_eq!((size.ws_row, size.ws_col), (50, 120));
    }
}
