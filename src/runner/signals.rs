//! Signal handling around a spawned child: forward what the caller sends us,
//! and die the way the child died.

use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal};
use nix::unistd::Pid;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

/// Signals relayed to the child. SIGINT is special-cased (see `forward_int`).
pub const FORWARDED: [Signal; 7] = [
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGINT,
];

fn forwarded_set() -> SigSet {
    let mut set = SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    set
}

/// Block the forwarded signals in this thread (and so in every thread spawned
/// after it); the relay thread receives them with `sigwait`. Call before
/// spawning any thread.
pub fn block() -> nix::Result<()> {
    signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&forwarded_set()), None)
}

/// In the child between fork and exec: the caller's dispositions, not ours.
/// Rust ignores SIGPIPE at start-up, a managed turn ignores SIGXFSZ and we
/// block the forwarded set; none of it may leak into the real CLI.
pub fn reset_for_child() -> nix::Result<()> {
    // SAFETY: setting SIG_DFL installs no Rust handler.
    unsafe { signal::signal(Signal::SIGPIPE, SigHandler::SigDfl) }?;
    restore_file_size_limit();
    signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
}

/// SIGXFSZ was set to ignored by us (not by the caller).
static XFSZ_IGNORED_BY_US: AtomicBool = AtomicBool::new(false);

/// A write past `ulimit -f` (RLIMIT_FSIZE) kills the writer by default. The
/// shim's own writes (database, errors.log) must fail with EFBIG instead, so
/// the turn runs as without the shim rather than the shim dying of SIGXFSZ.
pub fn ignore_file_size_limit() {
    // SAFETY: SIG_IGN installs no handler.
    if let Ok(old) = unsafe { signal::signal(Signal::SIGXFSZ, SigHandler::SigIgn) } {
        XFSZ_IGNORED_BY_US.store(old != SigHandler::SigIgn, Ordering::SeqCst);
    }
}

/// Give SIGXFSZ back its default if we were the ones ignoring it (before an
/// exec: an ignored signal stays ignored in the new image). Async-signal-safe.
pub fn restore_file_size_limit() {
    if XFSZ_IGNORED_BY_US.load(Ordering::SeqCst) {
        // SAFETY: setting SIG_DFL installs no Rust handler.
        let _ = unsafe { signal::signal(Signal::SIGXFSZ, SigHandler::SigDfl) };
    }
}

/// The children as the relay sees them: none started yet (signals end the
/// shim: the caller meant to stop `claude`, i.e. us), some running (each
/// gets the signal), or all reaped (nothing is sent to a recycled pid); and
/// whether the caller signalled them while they ran. A turn may run two at
/// once (the Agent SDK handshake).
#[derive(Clone, Default)]
pub struct ChildPid(
    Arc<Mutex<Children>>,
    Arc<AtomicBool>,
    Arc<AtomicI32>,
    /// SIGINT is noted, not sent: the turn interrupts the child itself.
    Arc<AtomicBool>,
);

#[derive(Default)]
struct Children {
    started: bool,
    running: Vec<i32>,
}

enum Child {
    NotYet,
    Running(Vec<Pid>),
    Gone,
}

impl ChildPid {
    fn lock(&self) -> std::sync::MutexGuard<'_, Children> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn set(&self, pid: i32) {
        let mut c = self.lock();
        c.started = true;
        c.running.push(pid);
    }
    /// `pid` was reaped.
    pub fn clear(&self, pid: i32) {
        self.lock().running.retain(|&p| p != pid);
    }
    /// Between attempts (a retry is about to spawn): signals end the shim
    /// again, as no child would receive them.
    pub fn between(&self) {
        let mut c = self.lock();
        c.started = false;
        c.running.clear();
    }
    /// Whether a signal meant to stop the child (anything but SIGWINCH)
    /// arrived while it ran, forwarded or delivered by the terminal.
    pub fn signalled(&self) -> bool {
        self.1.load(Ordering::SeqCst)
    }
    /// While `on`, SIGINT is noted but not sent to the children: the turn
    /// stops the child's turn its own way (a live CLI serves other turns).
    pub fn interrupt_myself(&self, on: bool) {
        self.3.store(on, Ordering::SeqCst);
    }
    /// The last such signal.
    pub fn last_signal(&self) -> Option<Signal> {
        Signal::try_from(self.2.load(Ordering::SeqCst)).ok()
    }
    fn get(&self) -> Child {
        let c = self.lock();
        match (c.started, c.running.is_empty()) {
            (false, _) => Child::NotYet,
            (true, false) => Child::Running(c.running.iter().map(|&p| Pid::from_raw(p)).collect()),
            (true, true) => Child::Gone,
        }
    }
}

/// Start the relay thread. It lives until the process exits.
pub fn relay(child: ChildPid) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let set = forwarded_set();
            while let Ok(sig) = set.wait() {
                let state = child.get();
                if sig != Signal::SIGWINCH && matches!(state, Child::Running(_)) {
                    child.2.store(sig as i32, Ordering::SeqCst);
                    child.1.store(true, Ordering::SeqCst);
                }
                match state {
                    // Nothing started yet (the shim is reading the prompt or
                    // probing): the caller meant to stop `claude`, i.e. us.
                    Child::NotYet if sig != Signal::SIGWINCH => die_by(sig),
                    Child::Running(_)
                        if sig == Signal::SIGINT
                            && (child.3.load(Ordering::SeqCst) || !forward_int()) => {}
                    Child::Running(pids) => {
                        for pid in pids {
                            let _ = signal::kill(pid, sig);
                        }
                    }
                    _ => {}
                }
            }
        })?;
    Ok(())
}

/// A terminal's Ctrl-C already reaches every process of the foreground group,
/// the child included; forwarding it too would deliver it twice. Otherwise
/// (background, no terminal, or `kill -INT` from a script) forward it.
fn forward_int() -> bool {
    let pgrp = nix::unistd::getpgrp();
    let in_foreground = [0, 1, 2].iter().any(|&fd| {
        // SAFETY: fds 0-2 are borrowed only for this call.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        nix::unistd::tcgetpgrp(fd).is_ok_and(|fg| fg == pgrp)
    });
    !in_foreground
}

/// Terminate this process by `sig`, as the child was, so the caller's `$?`
/// (and WIFSIGNALED) is identical. Falls back to 128+sig if we survive.
pub fn die_by(sig: Signal) -> ! {
    // SAFETY: restoring the default disposition installs no Rust handler.
    let _ = unsafe { signal::signal(sig, SigHandler::SigDfl) };
    let mut set = SigSet::empty();
    set.add(sig);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    let _ = signal::raise(sig);
    std::process::exit(128 + sig as i32)
}
