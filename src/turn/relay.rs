//! The relay of a warm turn: the message written to the lent live CLI, then
//! its output rendered for the caller's format up to the result, stderr as
//! it comes, the caller's signals and (for an Agent SDK caller) everything it
//! goes on writing — so the caller sees what a cold run prints.

use super::caller_side::CallerSide;
use super::launch::Ctx;
use crate::observe::Observer;
use crate::runner::render::Render;
use crate::runner::seal::Piece;
use crate::runner::tee::{self, Stream};
use crate::runner::{Exit, Watch};
use crate::warm::client::Lent;
use crate::{debug, warm};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::Instant;

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

/// Whether the relay goes on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    Stop,
}

impl Flow {
    fn stop_if(stop: bool) -> Flow {
        match stop {
            true => Flow::Stop,
            false => Flow::Go,
        }
    }
}

/// Which of the turn's pipes have something.
enum Polled {
    /// Nothing now (or a signal came): look at the turn again.
    Nothing,
    Ready {
        out: bool,
        err: bool,
        caller: bool,
    },
    /// The pipes cannot be watched: the relay ends.
    Failed,
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
    let mut r = Relay::new(ctx, lent, input.caller.as_ref(), hold, format, watch);
    if !r.send(input) {
        return r.finish();
    }
    if let Some(w) = watch {
        w.input_closed();
    }
    // A new process's patience counts from here, its message written.
    r.started = Instant::now();
    crate::timeline::cli_started();
    let mut buf = vec![0u8; 64 << 10];
    while r.watch_the_turn() == Flow::Go {
        let (out, err, caller) = match r.poll() {
            Polled::Nothing => continue,
            Polled::Failed => break,
            Polled::Ready { out, err, caller } => (out, err, caller),
        };
        if caller && r.caller_wrote(&mut buf) == Flow::Stop {
            break;
        }
        if err {
            r.cli_stderr(&mut buf);
        }
        if out && r.cli_stdout(&mut buf) == Flow::Stop {
            break;
        }
    }
    r.finish()
}

/// A warm turn being relayed (see [`relay`]).
struct Relay<'a> {
    ctx: &'a Ctx<'a>,
    lent: &'a Lent,
    caller: Option<&'a Caller>,
    hold: &'a tee::SharedHold,
    watch: Option<&'a dyn Watch>,
    out: Relayed,
    observer: Observer,
    render: Render,
    /// The end of a streamed reply waits until the turn is recorded.
    sealer: Option<crate::runner::seal::Sealer>,
    side: Option<CallerSide>,
    /// The answer to `initialize` the caller gets with the first line.
    answer: Option<Vec<u8>>,
    /// The caller's later messages, each whole or cut (see `runner::live`).
    lines: crate::runner::live::Lines,
    interrupt_id: String,
    interrupted_at: Option<Instant>,
    stopped_at: Option<Instant>,
    /// Bytes still to relay after the caller's signal, if draining.
    draining: Option<usize>,
    /// The start of a line of the process's not yet complete.
    partial: Vec<u8>,
    /// When the message was written (a new process's patience counts
    /// from then).
    started: Instant,
    patience: std::time::Duration,
    /// The process printed something.
    spoke: bool,
}

impl<'a> Relay<'a> {
    fn new(
        ctx: &'a Ctx<'a>,
        lent: &'a Lent,
        caller: Option<&'a Caller>,
        hold: &'a tee::SharedHold,
        format: crate::invocation::OutputFormat,
        watch: Option<&'a dyn Watch>,
    ) -> Relay<'a> {
        Relay {
            ctx,
            lent,
            caller,
            hold,
            watch,
            out: Relayed {
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
            },
            observer: Observer::new(crate::invocation::OutputFormat::StreamJson),
            render: Render::new(format),
            sealer: (format == crate::invocation::OutputFormat::StreamJson && watch.is_some())
                .then(crate::runner::seal::Sealer::default),
            side: caller.map(|_| CallerSide::after_its_message()),
            answer: caller.and_then(|c| c.answer.clone()),
            lines: crate::runner::live::Lines::new(ctx.live.clone()),
            interrupt_id: format!("claude-shim-interrupt-{}", std::process::id()),
            interrupted_at: None,
            stopped_at: None,
            draining: None,
            partial: Vec::new(),
            started: Instant::now(),
            patience: start_patience(),
            spoke: false,
        }
    }

    /// The caller's `initialize` for a new process, its message and what it
    /// wrote after, written to the process; false if it is gone.
    fn send(&mut self, input: &Input) -> bool {
        let mut first = Vec::new();
        if let Some((line, _)) = self.caller.and_then(|c| c.init.as_ref()) {
            first.extend_from_slice(line);
        }
        first.extend_from_slice(&input.line);
        if let (Some(c), Some(side)) = (self.caller, self.side.as_mut()) {
            first.extend_from_slice(&self.lines.pass(&c.pending));
            side.took(&c.pending, true);
        }
        (&self.lent.stdin).write_all(&first).is_ok()
    }

    fn kill(&self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.lent.pid), Signal::SIGKILL);
    }

    /// Before each wait: a silent new process, the caller's signals, an
    /// interrupt or a stop that takes too long.
    fn watch_the_turn(&mut self) -> Flow {
        // A new process that never answers a stream-json message (not a CLI
        // that speaks it) must not hang the turn: it goes, the turn runs cold.
        if self.lent.fresh && !self.spoke && self.started.elapsed() > self.patience {
            debug!(
                "warm: the new live CLI said nothing in {:?}; ending it",
                self.patience
            );
            self.kill();
            self.out.unresponsive = true;
            return Flow::Stop;
        }
        if self.ctx.child.signalled() && !self.out.signalled && self.signalled() == Flow::Stop {
            return Flow::Stop;
        }
        if self
            .interrupted_at
            .is_some_and(|t| t.elapsed() > INTERRUPT_PATIENCE)
            && !self.out.signalled
        {
            debug!("warm: the interrupted live CLI printed no result; ending it");
            self.kill();
            self.out.signalled = true;
            self.out.signalled_by = Some(Signal::SIGINT);
            return Flow::Stop;
        }
        let stopped_long_ago = std::time::Duration::from_secs(5);
        Flow::stop_if(
            self.stopped_at
                .is_some_and(|t| t.elapsed() > stopped_long_ago),
        )
    }

    /// The caller signalled the turn.
    fn signalled(&mut self) -> Flow {
        // An Agent SDK caller's turn is over once each message has its
        // result: then SIGINT stops the call, as it would stop an idle CLI.
        let idle = self.side.as_ref().is_some_and(|s| s.results >= s.messages);
        match self.ctx.child.last_signal() {
            Some(Signal::SIGINT) if !idle => {
                // Never into the middle of a line the caller is writing.
                let clean = self.side.as_ref().is_none_or(|s| s.partial.is_empty());
                if self.interrupted_at.is_none() && clean {
                    let line = warm::interrupt_line(&self.interrupt_id);
                    let _ = (&self.lent.stdin).write_all(&line);
                    self.interrupted_at = Some(Instant::now());
                    self.out.interrupted = true;
                }
                Flow::Go
            }
            sig => {
                // The caller stopped the turn: a cold CLI prints nothing
                // more — but what the process wrote before the signal came
                // (a cold CLI's would be in the caller's pipe already, such
                // as stream-json's `init` line) is relayed first.
                self.out.signalled = true;
                self.out.signalled_by = sig;
                self.stopped_at = Some(Instant::now());
                self.draining = Some(DRAIN_LIMIT);
                if !idle {
                    return Flow::Go;
                }
                tee::mute(self.hold);
                // Nothing more is owed (and SIGINT never reaches the
                // process: it is not kept).
                Flow::Stop
            }
        }
    }

    /// Wait for the process's output (and the caller's input) a moment;
    /// draining, only for what is in the pipes now.
    fn poll(&mut self) -> Polled {
        let reading_caller = self.side.as_ref().is_some_and(|s| !s.ended) && !self.out.signalled;
        let timeout = if self.draining.is_some() { 0u16 } else { 100 };
        // SAFETY: fd 0 outlives this call.
        let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
        let mut fds = vec![
            PollFd::new(self.lent.stdout.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.lent.stderr.as_fd(), PollFlags::POLLIN),
        ];
        if reading_caller {
            fds.push(PollFd::new(stdin, PollFlags::POLLIN));
        }
        let polled = poll(&mut fds, PollTimeout::from(timeout));
        let nothing_left = match polled {
            Ok(n) => n == 0,
            Err(e) => e != nix::errno::Errno::EINTR,
        };
        if self.draining.is_some() && nothing_left {
            self.draining = None;
            tee::mute(self.hold);
            return Polled::Nothing;
        }
        match polled {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Polled::Nothing,
            Ok(_) => {}
            Err(_) => return Polled::Failed,
        }
        let ready = |f: &PollFd| {
            f.revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            })
        };
        Polled::Ready {
            out: ready(&fds[0]),
            err: ready(&fds[1]),
            caller: fds.get(2).is_some_and(ready),
        }
    }

    /// What the Agent SDK caller wrote: on to the process.
    fn caller_wrote(&mut self, buf: &mut [u8]) -> Flow {
        let side = self.side.as_mut().expect("reading the caller");
        let stdin = &self.lent.stdin;
        match nix::unistd::read(0, buf) {
            Ok(0) | Err(_) => {
                let _ = (&*stdin).write_all(&self.lines.finish());
                if let Some(nl) = side.end() {
                    let _ = (&*stdin).write_all(nl);
                }
            }
            Ok(n) => {
                // The process reads on: a failed write means it is gone,
                // which its stdout says.
                let _ = (&*stdin).write_all(&self.lines.pass(&buf[..n]));
                let cold_may_run = self.out.wrote == 0 || !tee::released(self.hold);
                side.took(&buf[..n], cold_may_run);
            }
        }
        Flow::stop_if(side.done() && self.out.exit.is_some())
    }

    fn cli_stderr(&mut self, buf: &mut [u8]) {
        if let Ok(n) = (&self.lent.stderr).read(buf) {
            if n > 0 {
                self.out.stderr += n;
                tee::pass(Stream::Err, &buf[..n], self.hold, false);
            }
        }
    }

    /// What the process printed: each whole line relayed.
    fn cli_stdout(&mut self, buf: &mut [u8]) -> Flow {
        let n = match (&self.lent.stdout).read(buf) {
            Ok(0) | Err(_) => return Flow::Stop,
            Ok(n) => n,
        };
        // A process that writes on after the signal is not drained for ever.
        let drained = self.draining.as_mut().is_some_and(|left| {
            *left = left.saturating_sub(n);
            *left == 0
        });
        self.spoke = true;
        self.partial.extend_from_slice(&buf[..n]);
        while let Some(nl) = memchr::memchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            if self.line(&line) == Flow::Stop {
                return Flow::Stop;
            }
        }
        if drained {
            self.draining = None;
            tee::mute(self.hold);
        }
        Flow::Go
    }

    /// One line the process printed: observed, rendered for the caller.
    fn line(&mut self, line: &[u8]) -> Flow {
        // The answer to our interrupt is not the caller's to see.
        if super::initialize::answers(line, &self.interrupt_id) {
            return Flow::Go;
        }
        // Nor a new process's answer to the caller's `initialize`: the
        // caller has the shim's (heard, to check what it remembers).
        let init_id = self
            .caller
            .and_then(|c| c.init.as_ref().map(|(_, id)| id.as_str()));
        if init_id.is_some_and(|id| super::initialize::answers(line, id)) {
            if let Some(heard) = self.caller.and_then(|c| c.heard.as_ref()) {
                heard(self.lent.pid, line);
            }
            return Flow::Go;
        }
        let fed = self.observer.feed(line);
        if fed.result {
            crate::runner::live::result(&self.ctx.live, self.observer.observation());
            if let Some(w) = self.watch {
                w.result(self.observer.observation());
            }
        }
        if let Some(side) = self.side.as_mut() {
            side.printed(line);
        }
        let rendered = self.render.line(line);
        self.pass(rendered.out);
        if let Some(code) = rendered.exit {
            // A cold run stopped by SIGINT exits 0, its error result printed.
            self.out.exit = Some(if self.out.interrupted { 0 } else { code });
            return match self.side.as_mut() {
                // A cold CLI ends after the result SIGINT brought.
                Some(side) if !self.out.interrupted => {
                    side.results += 1;
                    Flow::stop_if(side.done())
                }
                _ => Flow::Stop,
            };
        }
        let exited = self.out.exit.is_some();
        Flow::stop_if(self.side.as_ref().is_some_and(|s| s.done() && exited))
    }

    /// Rendered output on to the caller (through the sealer, for a
    /// streamed reply whose end waits for the record).
    fn pass(&mut self, mut rendered: Vec<u8>) {
        let obs = self.observer.observation();
        let proven = obs.init_session.is_some() || obs.has_success_result();
        if rendered.is_empty() {
            if proven {
                tee::pass(Stream::Out, b"", self.hold, true);
            }
            return;
        }
        if let Some(mut a) = self.answer.take() {
            // The answer to `initialize` comes first, as a cold CLI's.
            a.append(&mut rendered);
            rendered = a;
        }
        self.out.wrote += rendered.len();
        let Some(sealer) = self.sealer.as_mut() else {
            tee::pass(Stream::Out, &rendered, self.hold, proven);
            return;
        };
        for piece in sealer.feed(&rendered) {
            match piece {
                Piece::Pass(bytes) => {
                    tee::pass(Stream::Out, &bytes, self.hold, proven);
                }
                Piece::Sealed => {
                    if let Some(w) = self.watch {
                        w.sealed(self.observer.observation());
                    }
                }
            }
        }
    }

    /// The relay is over: what is left of a sealed reply, and how the turn
    /// ended.
    fn finish(mut self) -> Relayed {
        crate::timeline::cli_ended();
        if let Some(rest) = self
            .sealer
            .as_mut()
            .map(crate::runner::seal::Sealer::finish)
        {
            tee::pass(Stream::Out, &rest, self.hold, false);
        }
        let out = &mut self.out;
        if self.ctx.child.signalled() && !out.signalled && !out.interrupted {
            // The caller's signal ended the process between the check above and
            // its end of output: the turn was stopped all the same (never rerun).
            out.signalled = true;
            out.signalled_by = self.ctx.child.last_signal();
        }
        if out.signalled {
            tee::mute(self.hold);
            // Let it end (the keeper reaps it); its last words are not ours.
            out.exit = None;
        }
        if let Some(side) = self.side.take() {
            out.from_caller = side.kept;
            out.caller_controlled = side.controlled;
        }
        out.observation = self.observer.finish();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cold_cli_ends_by_a_signal_as_it_handles_it() {
        assert_eq!(cold_exit_on(Signal::SIGINT), Exit::Code(0));
        assert_eq!(cold_exit_on(Signal::SIGTERM), Exit::Code(143));
        assert_eq!(cold_exit_on(Signal::SIGHUP), Exit::Code(129));
        assert_eq!(cold_exit_on(Signal::SIGQUIT), Exit::Signal(Signal::SIGQUIT));
    }
}
