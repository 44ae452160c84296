//! The relay of a warm turn: the message written to the lent live CLI, then
//! its output rendered for the caller's format up to the result, stderr as
//! it comes, the caller's signals and (for an Agent SDK caller) everything it
//! goes on writing — so the caller sees what a cold run prints.

use super::launch::Ctx;
use crate::events::Event;
use crate::observe::Observer;
use crate::runner::render::Render;
use crate::runner::seal::Piece;
use crate::runner::tee::{self, Stream};
use crate::runner::{Exit, Watch};
use crate::warm::client::Lent;
use crate::{debug, warm};
use std::io::{Read, Write};
use std::os::fd::AsFd;

/// What a turn writes to a live process.
pub(super) struct Input {
    /// The user line.
    pub(super) line: Vec<u8>,
    /// An Agent SDK caller, who goes on writing after it.
    pub(super) caller: Option<Caller>,
}

pub(super) struct Caller {
    /// The caller's `initialize` (line, request id), for a process that never
    /// had one; its answer is dropped (and told to `heard`).
    pub(super) init: Option<(Vec<u8>, String)>,
    /// The answer to `initialize` the caller gets with the first line.
    pub(super) answer: Option<Vec<u8>>,
    pub(super) heard: Option<tee::Heard>,
    /// What the caller wrote after its message, read ahead.
    pub(super) pending: Vec<u8>,
}

/// How a cold CLI ends when the caller signals it mid-turn (checked on
/// 2.1.330): SIGINT → exit 0, SIGTERM and SIGHUP → 128 + n (it handles
/// them); SIGQUIT, SIGUSR1 and SIGUSR2 it does not handle: it dies by them.
pub(super) fn cold_exit_on(sig: nix::sys::signal::Signal) -> Exit {
    use nix::sys::signal::Signal;
    match sig {
        Signal::SIGINT => Exit::Code(0),
        Signal::SIGQUIT | Signal::SIGUSR1 | Signal::SIGUSR2 => Exit::Signal(sig),
        other => Exit::Code(128 + other as i32),
    }
}

/// How long a new live CLI may take to say anything about its first
/// message (the CLI prints its init event before it calls the API; a cold
/// start takes 0.4–2 s).
pub(super) fn start_patience() -> std::time::Duration {
    crate::env::warm_start_patience()
}

pub(super) struct Relayed {
    /// The turn's exit status, from its result.
    pub(super) exit: Option<i32>,
    pub(super) observation: crate::observe::Observation,
    /// The caller's signal stopped the turn (the process ends by it).
    pub(super) signalled: bool,
    pub(super) signalled_by: Option<nix::sys::signal::Signal>,
    /// The caller's SIGINT interrupted the turn (the process lives on).
    pub(super) interrupted: bool,
    /// Bytes that reached (or were held for) the caller.
    pub(super) wrote: usize,
    /// Bytes the process printed on stderr.
    pub(super) stderr: usize,
    /// A new process said nothing in [`start_patience`] (it was ended).
    pub(super) unresponsive: bool,
    /// An Agent SDK caller sent a control request after its message.
    pub(super) caller_controlled: bool,
    /// What the Agent SDK caller wrote after its message (read ahead and
    /// since), passed on to the process.
    pub(super) from_caller: Vec<u8>,
}

/// How long an interrupted live process may take to print its result.
const INTERRUPT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// At most this much of what a live CLI wrote is relayed once the caller's
/// signal stopped the turn.
const DRAIN_LIMIT: usize = 1 << 20;

/// An Agent SDK caller's side of the turn: everything it writes goes on to
/// the process, which serves it as a cold one would — permission answers,
/// hook answers, interrupts, further messages. A cold CLI ends when its
/// input has ended and it is idle: so does the turn (the process lives on).
#[derive(Default)]
struct CallerSide {
    /// The caller's input ended.
    ended: bool,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
    /// User messages written, results printed.
    messages: usize,
    results: usize,
    /// The process's last reported session state (a CLI that reports it).
    state: Option<String>,
}

impl CallerSide {
    /// Complete lines among `bytes`, counted.
    /// `cold_may_run`: nothing has reached the caller for good, so a cold
    /// run may still follow and needs what the caller wrote (after that it
    /// is not kept: a long session does not pile it up).
    fn took(&mut self, bytes: &[u8], out: &mut Relayed, cold_may_run: bool) {
        match cold_may_run {
            true => out.from_caller.extend_from_slice(bytes),
            false => out.from_caller = Vec::new(),
        }
        self.partial.extend_from_slice(bytes);
        while let Some(nl) = memchr::memchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            match Event::parse(&line) {
                Some(Event::User(_)) => self.messages += 1,
                Some(Event::ControlRequest(_)) => out.caller_controlled = true,
                // A permission answer that adds rules or changes the mode
                // changes the process for the turns after it.
                Some(Event::ControlResponse(_)) if changes_permissions(&line) => {
                    out.caller_controlled = true
                }
                _ => {}
            }
        }
    }

    /// The caller's input ended: a last line without its newline is
    /// completed, as a cold CLI reads it at the end of its input (the bytes
    /// to write).
    fn end(&mut self, out: &mut Relayed) -> Option<&'static [u8]> {
        self.ended = true;
        if self.partial.is_empty() {
            return None;
        }
        let n = out.from_caller.len();
        self.took(b"\n", out, true);
        out.from_caller.truncate(n);
        Some(b"\n")
    }

    /// A line the process printed.
    fn printed(&mut self, line: &[u8]) {
        if memchr::memmem::find(line, b"session_state_changed").is_some() {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) {
                if v["subtype"] == "session_state_changed" {
                    self.state = v["state"].as_str().map(str::to_owned);
                }
            }
        }
    }

    /// Whether a cold CLI would have ended by now.
    fn done(&self) -> bool {
        self.ended
            && self.results >= self.messages
            && self.state.as_deref().is_none_or(|s| s == "idle")
    }
}

/// Whether a caller's answer to a permission prompt adds permission rules
/// or changes the permission mode (`updatedPermissions`).
fn changes_permissions(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"updatedPermissions").is_some()
        && serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| {
            v["response"]["response"]["updatedPermissions"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        })
}

/// Write the message, then relay the turn: stdout rendered for the caller's
/// format up to the result, stderr as it comes. The caller's SIGINT stops the
/// turn as it stops a cold run — its result is an error, printed, and the
/// exit status 0 — through the live process's own interrupt request (a
/// signal would end the process, and it would print nothing); other signals
/// reach the process and end it, as a cold run ends.
pub(super) fn relay(
    ctx: &Ctx<'_>,
    lent: &Lent,
    input: &Input,
    hold: &tee::SharedHold,
    format: crate::invocation::OutputFormat,
    watch: Option<&dyn Watch>,
) -> Relayed {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use nix::sys::signal::Signal;
    let mut out = Relayed {
        exit: None,
        observation: Default::default(),
        signalled: false,
        signalled_by: None,
        interrupted: false,
        wrote: 0,
        stderr: 0,
        unresponsive: false,
        caller_controlled: false,
        from_caller: Vec::new(),
    };
    let mut observer = Observer::new(crate::invocation::OutputFormat::StreamJson);
    let mut render = Render::new(format);
    // The end of a streamed reply waits until the turn is recorded.
    let mut sealer = (format == crate::invocation::OutputFormat::StreamJson && watch.is_some())
        .then(crate::runner::seal::Sealer::default);
    let caller = input.caller.as_ref();
    let mut side = caller.map(|_| CallerSide {
        messages: 1,
        ..Default::default()
    });
    let init_id = caller.and_then(|c| c.init.as_ref().map(|(_, id)| id.as_str()));
    let mut answer = caller.and_then(|c| c.answer.clone());
    let mut first = Vec::new();
    if let Some((line, _)) = caller.and_then(|c| c.init.as_ref()) {
        first.extend_from_slice(line);
    }
    first.extend_from_slice(&input.line);
    // The caller's later messages, each whole or cut (see `runner::live`).
    let mut lines = crate::runner::live::Lines::new(ctx.live.clone());
    if let (Some(c), Some(side)) = (caller, side.as_mut()) {
        first.extend_from_slice(&lines.pass(&c.pending));
        side.took(&c.pending, &mut out, true);
    }
    if (&lent.stdin).write_all(&first).is_err() {
        out.observation = observer.finish();
        return out;
    }
    if let Some(w) = watch {
        w.input_closed();
    }
    let interrupt_id = format!("claude-shim-interrupt-{}", std::process::id());
    let mut interrupted_at: Option<std::time::Instant> = None;
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut stopped_at: Option<std::time::Instant> = None;
    // Bytes still to relay after the caller's signal (see below), if draining.
    let mut draining: Option<usize> = None;
    let started = std::time::Instant::now();
    let patience = start_patience();
    let mut spoke = false;
    let kill = || {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(lent.pid), Signal::SIGKILL);
    };
    // SAFETY: fd 0 outlives this call.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    'turn: loop {
        // A new process that never answers a stream-json message (not a CLI
        // that speaks it) must not hang the turn: it goes, the turn runs cold.
        if lent.fresh && !spoke && started.elapsed() > patience {
            debug!("warm: the new live CLI said nothing in {patience:?}; ending it");
            kill();
            out.unresponsive = true;
            break;
        }
        if ctx.child.signalled() && !out.signalled {
            // An Agent SDK caller's turn is over once each message has its
            // result: then SIGINT stops the call, as it would stop an idle CLI.
            let idle = side.as_ref().is_some_and(|s| s.results >= s.messages);
            match ctx.child.last_signal() {
                Some(Signal::SIGINT) if !idle => {
                    // Never into the middle of a line the caller is writing.
                    let clean = side.as_ref().is_none_or(|s| s.partial.is_empty());
                    if interrupted_at.is_none() && clean {
                        let _ = (&lent.stdin).write_all(&warm::interrupt_line(&interrupt_id));
                        interrupted_at = Some(std::time::Instant::now());
                        out.interrupted = true;
                    }
                }
                sig => {
                    // The caller stopped the turn: a cold CLI prints nothing
                    // more — but what the process wrote before the signal came
                    // (a cold CLI's would be in the caller's pipe already, such
                    // as stream-json's `init` line) is relayed first.
                    out.signalled = true;
                    out.signalled_by = sig;
                    stopped_at = Some(std::time::Instant::now());
                    draining = Some(DRAIN_LIMIT);
                    if idle {
                        tee::mute(hold);
                        // Nothing more is owed (and SIGINT never reaches the
                        // process: it is not kept).
                        break 'turn;
                    }
                }
            }
        }
        if interrupted_at.is_some_and(|t| t.elapsed() > INTERRUPT_PATIENCE) && !out.signalled {
            debug!("warm: the interrupted live CLI printed no result; ending it");
            kill();
            out.signalled = true;
            out.signalled_by = Some(Signal::SIGINT);
            break;
        }
        if stopped_at.is_some_and(|t| t.elapsed() > std::time::Duration::from_secs(5)) {
            break;
        }
        let reading_caller = side.as_ref().is_some_and(|s| !s.ended) && !out.signalled;
        // Draining: only what is in the pipes now, never a wait for more.
        let timeout = if draining.is_some() { 0u16 } else { 100 };
        let mut fds = vec![
            PollFd::new(lent.stdout.as_fd(), PollFlags::POLLIN),
            PollFd::new(lent.stderr.as_fd(), PollFlags::POLLIN),
        ];
        if reading_caller {
            fds.push(PollFd::new(stdin, PollFlags::POLLIN));
        }
        let polled = poll(&mut fds, PollTimeout::from(timeout));
        let nothing_left = match polled {
            Ok(n) => n == 0,
            Err(e) => e != nix::errno::Errno::EINTR,
        };
        if draining.is_some() && nothing_left {
            draining = None;
            tee::mute(hold);
            continue;
        }
        match polled {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        let ready = |f: &PollFd| {
            f.revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            })
        };
        let (out_ready, err_ready) = (ready(&fds[0]), ready(&fds[1]));
        let caller_ready = fds.get(2).is_some_and(ready);
        if caller_ready {
            let side = side.as_mut().expect("reading the caller");
            match nix::unistd::read(0, &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = (&lent.stdin).write_all(&lines.finish());
                    if let Some(nl) = side.end(&mut out) {
                        let _ = (&lent.stdin).write_all(nl);
                    }
                }
                Ok(n) => {
                    // The process reads on: a failed write means it is gone,
                    // which its stdout says.
                    let _ = (&lent.stdin).write_all(&lines.pass(&buf[..n]));
                    let cold_may_run = out.wrote == 0 || !tee::released(hold);
                    side.took(&buf[..n], &mut out, cold_may_run);
                }
            }
            if side.done() && out.exit.is_some() {
                break 'turn;
            }
        }
        if err_ready {
            if let Ok(n) = (&lent.stderr).read(&mut buf) {
                if n > 0 {
                    out.stderr += n;
                    tee::pass(Stream::Err, &buf[..n], hold, false);
                }
            }
        }
        if !out_ready {
            continue;
        }
        let n = match (&lent.stdout).read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // A process that writes on after the signal is not drained for ever.
        let drained = draining.as_mut().is_some_and(|left| {
            *left = left.saturating_sub(n);
            *left == 0
        });
        spoke = true;
        partial.extend_from_slice(&buf[..n]);
        while let Some(nl) = memchr::memchr(b'\n', &partial) {
            let line: Vec<u8> = partial.drain(..=nl).collect();
            // The answer to our interrupt is not the caller's to see.
            if super::initialize::answers(&line, &interrupt_id) {
                continue;
            }
            // Nor a new process's answer to the caller's `initialize`: the
            // caller has the shim's (heard, to check what it remembers).
            if init_id.is_some_and(|id| super::initialize::answers(&line, id)) {
                if let Some(heard) = caller.and_then(|c| c.heard.as_ref()) {
                    heard(lent.pid, &line);
                }
                continue;
            }
            let fed = observer.feed(&line);
            if fed.result {
                crate::runner::live::result(&ctx.live, observer.observation());
                if let Some(w) = watch {
                    w.result(observer.observation());
                }
            }
            if let Some(side) = side.as_mut() {
                side.printed(&line);
            }
            let mut rendered = render.line(&line);
            let obs = observer.observation();
            let proven = obs.init_session.is_some() || obs.has_success_result();
            if !rendered.out.is_empty() {
                if let Some(mut a) = answer.take() {
                    // The answer to `initialize` comes first, as a cold CLI's.
                    a.append(&mut rendered.out);
                    rendered.out = a;
                }
                out.wrote += rendered.out.len();
                match sealer.as_mut() {
                    Some(sealer) => {
                        for piece in sealer.feed(&rendered.out) {
                            match piece {
                                Piece::Pass(bytes) => {
                                    tee::pass(Stream::Out, &bytes, hold, proven);
                                }
                                Piece::Sealed => {
                                    if let Some(w) = watch {
                                        w.sealed(observer.observation());
                                    }
                                }
                            }
                        }
                    }
                    None => {
                        tee::pass(Stream::Out, &rendered.out, hold, proven);
                    }
                }
            } else if proven {
                tee::pass(Stream::Out, b"", hold, true);
            }
            if let Some(code) = rendered.exit {
                // A cold run stopped by SIGINT exits 0, its error result printed.
                out.exit = Some(if out.interrupted { 0 } else { code });
                match side.as_mut() {
                    // A cold CLI ends after the result SIGINT brought.
                    Some(side) if !out.interrupted => {
                        side.results += 1;
                        if side.done() {
                            break 'turn;
                        }
                    }
                    _ => break 'turn,
                }
            } else if side
                .as_ref()
                .is_some_and(|s| s.done() && out.exit.is_some())
            {
                break 'turn;
            }
        }
        if drained {
            draining = None;
            tee::mute(hold);
        }
    }
    if let Some(rest) = sealer.as_mut().map(crate::runner::seal::Sealer::finish) {
        tee::pass(Stream::Out, &rest, hold, false);
    }
    if ctx.child.signalled() && !out.signalled && !out.interrupted {
        // The caller's signal ended the process between the check above and
        // its end of output: the turn was stopped all the same (never rerun).
        out.signalled = true;
        out.signalled_by = ctx.child.last_signal();
    }
    if out.signalled {
        tee::mute(hold);
        // Let it end (the keeper reaps it); its last words are not ours.
        out.exit = None;
    }
    out.observation = observer.finish();
    out
}
