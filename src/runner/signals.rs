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

/// The forwarded signals the caller started us ignoring (nohup's SIGHUP, a
/// background job's SIGINT), read once before anything blocks them. The
/// relay still receives them (a blocked signal is queued even when
/// ignored), and the CLI inherits SIG_IGN through its exec.
fn ignored_at_start() -> SigSet {
    static SET: std::sync::OnceLock<SigSet> = std::sync::OnceLock::new();
    *SET.get_or_init(|| {
        let mut set = SigSet::empty();
        for s in FORWARDED.into_iter().filter(|&s| ignored(s)) {
            set.add(s);
        }
        set
    })
}

/// Whether `sig`'s disposition is SIG_IGN.
fn ignored(sig: Signal) -> bool {
    // SAFETY: a null new action only reads the current one into `old`.
    unsafe {
        let mut old: nix::libc::sigaction = std::mem::zeroed();
        nix::libc::sigaction(sig as i32, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == nix::libc::SIG_IGN
    }
}

/// Block the forwarded signals in this thread (and so in every thread spawned
/// after it); the relay thread receives them with `sigwait`. Call before
/// spawning any thread.
pub fn block() -> nix::Result<()> {
    ignored_at_start();
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
pub struct ChildPid {
    children: Arc<Mutex<Children>>,
    /// A signal meant to stop the child came while it ran.
    signalled: Arc<AtomicBool>,
    /// The last such signal's number.
    last_signal: Arc<AtomicI32>,
    /// SIGINT is noted, not sent: the turn interrupts the child itself.
    interrupt_myself: Arc<AtomicBool>,
    /// Stops the children while the caller has us stopped (started with
    /// the first child).
    stops: Arc<std::sync::OnceLock<Option<super::stops::Watcher>>>,
}

#[derive(Default)]
struct Children {
    started: bool,
    running: Vec<i32>,
    /// A child is being spawned: it may run already (its exec done) while
    /// its pid is not known yet.
    spawning: bool,
    /// Signals that arrived meanwhile: sent once its pid is known.
    pending: Vec<Signal>,
}

enum Child {
    NotYet,
    /// One being spawned (and those running beside it).
    Spawning(Vec<Pid>),
    Running(Vec<Pid>),
    Gone,
}

impl ChildPid {
    fn lock(&self) -> std::sync::MutexGuard<'_, Children> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// A child is about to be spawned: until [`set`](Self::set) gives its
    /// pid, a caller's signal waits for it rather than ending the shim. The
    /// child may already run its own code then, its handlers set: the CLI
    /// would have handled the signal without the shim.
    pub fn spawning(&self) {
        self.lock().spawning = true;
    }
    /// The child being spawned is `pid`: the signals that waited for it
    /// are sent.
    pub fn set(&self, pid: i32) {
        if let Some(w) = self.stops.get_or_init(super::stops::Watcher::start) {
            w.running(pid);
        }
        for sig in self.lock().started(pid) {
            let _ = signal::kill(Pid::from_raw(pid), sig);
        }
    }
    /// `pid` was reaped.
    pub fn clear(&self, pid: i32) {
        self.lock().running.retain(|&p| p != pid);
        if let Some(Some(w)) = self.stops.get() {
            w.ended(pid);
        }
    }
    /// Between attempts (a retry is about to spawn): signals end the shim
    /// again, as no child would receive them.
    /// A signal that waited for a child whose spawn failed ends the shim,
    /// as it would have with no child.
    pub fn between(&self) {
        let waited = self.lock().between();
        if let Some(sig) = waited {
            die_by(sig);
        }
    }
    /// `sig` came while a child was being spawned (`told`: the children
    /// running beside it, sent it already): kept for it, or, if its pid is
    /// known by now, sent to it.
    fn pend(&self, sig: Signal, told: &[Pid]) {
        for pid in self.lock().pend(sig, told) {
            let _ = signal::kill(pid, sig);
        }
    }
    /// Whether a signal meant to stop the child (anything but SIGWINCH)
    /// arrived while it ran, forwarded or delivered by the terminal.
    pub fn signalled(&self) -> bool {
        self.signalled.load(Ordering::SeqCst)
    }
    /// While `on`, SIGINT is noted but not sent to the children: the turn
    /// stops the child's turn its own way (a live CLI serves other turns).
    pub fn interrupt_myself(&self, on: bool) {
        self.interrupt_myself.store(on, Ordering::SeqCst);
    }
    /// The last such signal.
    pub fn last_signal(&self) -> Option<Signal> {
        Signal::try_from(self.last_signal.load(Ordering::SeqCst)).ok()
    }
    fn get(&self) -> Child {
        self.lock().state()
    }
}

impl Children {
    fn pids(&self) -> Vec<Pid> {
        self.running.iter().map(|&p| Pid::from_raw(p)).collect()
    }

    fn state(&self) -> Child {
        match (self.spawning, self.started, self.running.is_empty()) {
            (true, _, _) => Child::Spawning(self.pids()),
            (false, false, _) => Child::NotYet,
            (false, true, false) => Child::Running(self.pids()),
            (false, true, true) => Child::Gone,
        }
    }

    /// `pid` started: the signals to send it.
    fn started(&mut self, pid: i32) -> Vec<Signal> {
        self.started = true;
        self.spawning = false;
        self.running.push(pid);
        std::mem::take(&mut self.pending)
    }

    /// `sig` while spawning: kept, or the children to send it to now (those
    /// started since, not in `told`).
    fn pend(&mut self, sig: Signal, told: &[Pid]) -> Vec<Pid> {
        if self.spawning {
            self.pending.push(sig);
            return Vec::new();
        }
        self.pids()
            .into_iter()
            .filter(|p| !told.contains(p))
            .collect()
    }

    /// Between attempts, or after a failed spawn: the first signal that
    /// waited for a child that never came.
    fn between(&mut self) -> Option<Signal> {
        self.started = false;
        self.running.clear();
        self.spawning = false;
        std::mem::take(&mut self.pending).first().copied()
    }
}

/// Start the relay thread. It lives until the process exits.
pub fn relay(child: ChildPid) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let set = forwarded_set();
            while let Ok(sig) = set.wait() {
                if sig == Signal::SIGWINCH {
                    // The CLI's terminals first, so it reads the new size.
                    super::terminal::resized();
                }
                let state = child.get();
                if sig != Signal::SIGWINCH
                    && matches!(state, Child::Running(_) | Child::Spawning(_))
                {
                    child.last_signal.store(sig as i32, Ordering::SeqCst);
                    child.signalled.store(true, Ordering::SeqCst);
                }
                let int_not_sent = sig == Signal::SIGINT
                    && (child.interrupt_myself.load(Ordering::SeqCst) || !forward_int());
                match state {
                    // Nothing started yet (the shim is reading the prompt or
                    // probing): the caller meant to stop `claude`, i.e. us.
                    Child::NotYet if sig != Signal::SIGWINCH => before_cli(sig),
                    // A terminal's Ctrl-C, and no child that surely had it.
                    Child::Spawning(pids) if int_not_sent && pids.is_empty() => die_by(sig),
                    Child::Running(_) | Child::Spawning(_) if int_not_sent => {}
                    Child::Running(pids) => {
                        for pid in pids {
                            let _ = signal::kill(pid, sig);
                        }
                    }
                    Child::Spawning(pids) if sig != Signal::SIGWINCH => {
                        for pid in &pids {
                            let _ = signal::kill(*pid, sig);
                        }
                        child.pend(sig, &pids);
                    }
                    _ => {}
                }
            }
        })?;
    Ok(())
}

/// How long after its exec the CLI has set its handlers for SIGHUP, SIGINT
/// and SIGTERM (2.1.330 on a 2-core machine: killed by the signal at 0.4 s,
/// handled at 0.45 s under load 5; earlier when quiet).
pub const CLI_HANDLERS: std::time::Duration = std::time::Duration::from_millis(300);

/// How the CLI ends on `sig` once its handlers are set, before it has sent
/// anything (reading its prompt): SIGHUP exits 129, SIGINT 0, SIGTERM 143,
/// printing nothing (2.1.302 to 2.1.332; docs/cli-versions.md). `None`: it
/// dies by the signal.
pub fn cli_exit_on(sig: Signal) -> Option<i32> {
    match sig {
        Signal::SIGHUP => Some(129),
        Signal::SIGINT => Some(0),
        Signal::SIGTERM => Some(143),
        _ => None,
    }
}

/// A signal before any CLI runs for the turn (the shim reads the prompt, or
/// looks the conversation up): what the CLI in our place would do. While it
/// starts, the signal has its inherited disposition: ignored, or death by
/// it. Once its handlers are set they end it, ignored at start or not.
fn before_cli(sig: Signal) {
    let handled = crate::timeline::elapsed() >= CLI_HANDLERS;
    match cli_exit_on(sig) {
        Some(code) if handled => std::process::exit(code),
        _ if ignored_at_start().contains(sig) => {}
        _ => die_by(sig),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_while_a_child_is_spawned_waits_for_its_pid() {
        let mut c = Children::default();
        assert!(matches!(c.state(), Child::NotYet), "ends the shim");
        c.spawning = true;
        assert!(matches!(c.state(), Child::Spawning(ref p) if p.is_empty()));
        assert_eq!(c.pend(Signal::SIGTERM, &[]), Vec::<Pid>::new(), "kept");
        assert_eq!(c.started(42), vec![Signal::SIGTERM], "sent once known");
        assert!(matches!(c.state(), Child::Running(ref p) if p == &[Pid::from_raw(42)]));
        assert!(c.started(43).is_empty(), "sent once");
    }

    #[test]
    fn a_signal_that_finds_the_pid_known_goes_to_the_new_child_only() {
        let mut c = Children::default();
        c.started(7);
        c.spawning = true;
        let Child::Spawning(told) = c.state() else {
            panic!("spawning")
        };
        // The pid became known between the relay's look and its `pend`.
        assert!(c.started(8).is_empty());
        assert_eq!(c.pend(Signal::SIGHUP, &told), vec![Pid::from_raw(8)]);
    }

    #[test]
    fn a_signal_for_a_child_whose_spawn_failed_ends_the_shim() {
        let mut c = Children {
            spawning: true,
            ..Default::default()
        };
        c.pend(Signal::SIGTERM, &[]);
        assert_eq!(c.between(), Some(Signal::SIGTERM));
        assert!(matches!(c.state(), Child::NotYet));
        assert_eq!(c.between(), None, "between attempts: nothing waited");
    }
}
