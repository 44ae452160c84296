//! Spawn the real claude, feed its stdin, tee its output, relay signals, and
//! report how it ended.

pub mod detached;
/// exec the real binary (pass-through), or say why it cannot run.
pub mod exec;
/// A live session's re-sent transcripts, cut on the way to the CLI.
pub mod live;
/// The CLI's stream-json rendered as the caller's format asked.
pub mod render;
/// Where a streaming caller has the whole reply (the turn is recorded first).
pub mod seal;
pub mod signals;
/// The caller's stops reach the CLIs it started.
pub mod stops;
pub mod tee;
pub mod terminal;
mod watch;

pub use watch::{Proof, Watch};

use crate::invocation::OutputFormat;
use crate::observe::{Observation, Observer};
use nix::sys::signal::Signal;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

/// What the child reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinPlan {
    /// Our stdin as it is (the shim never read it).
    Inherit,
    /// These bytes, then end of input (shared: an attempt's plan is cloned
    /// for its feeder, and a 1 MiB prompt copied is 256 page faults).
    Bytes(bytes::Bytes),
    /// `first` at once; then, once the run is committed, `pending` (input
    /// already read ahead) and whatever the caller writes later, until EOF
    /// (stream-json input stays open for tool answers and control responses).
    Stream { first: Vec<u8>, pending: Vec<u8> },
    /// A pipe the turn writes itself (see [`Running::take_stdin`]).
    Manual,
    /// A pipe that stays open and gets nothing until the child ends: piped
    /// input the CLI would have given up on (see `prompt::STDIN_PATIENCE`).
    Silent,
}

pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub stdin: StdinPlan,
    pub output: OutputFormat,
    /// Hold output until the run proves itself (see `proof`).
    pub hold: bool,
    pub proof: Proof,
    /// Recursion-guard value for the child's environment.
    pub guard: String,
    /// The `control_response` lines to watch for among the first the child
    /// prints: answers the caller already had (the requests were replayed to
    /// this child after another one answered, or the shim answered) are
    /// dropped (the Agent SDK handshake).
    pub answers: tee::Answers,
    /// Variables added to the child's environment.
    pub env: Vec<(String, String)>,
    /// The child speaks stream-json; the caller gets `output` as a cold run
    /// would print it (see `runner::render`).
    pub render: bool,
    /// The result's cost figures are made the call's own (a session the
    /// shim resumed; see `cost`).
    pub own_cost: Option<crate::cost::Own>,
    /// The caller's session: its later messages that re-send the
    /// transcript go as their new part only (see `live`).
    pub live: Option<live::Live>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(Signal),
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }

    /// End this process the way the child ended.
    pub fn reproduce(self) -> ! {
        match self {
            Exit::Code(code) => std::process::exit(code),
            Exit::Signal(sig) => signals::die_by(sig),
        }
    }

    /// For logs and the runs table: the code, or -signal.
    pub fn as_i32(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => -(s as i32),
        }
    }
}

pub struct Finished {
    pub exit: Exit,
    pub observation: Observation,
    hold: tee::SharedHold,
}

impl Finished {
    /// A run that ended with `exit`, its output going through `hold`.
    pub fn new(exit: Exit, observation: Observation, hold: tee::SharedHold) -> Finished {
        Finished {
            exit,
            observation,
            hold,
        }
    }

    /// A run that could not be waited for (its end is unknown: exit 1).
    pub fn failed() -> Finished {
        Finished {
            exit: Exit::Code(1),
            observation: Observation::default(),
            hold: tee::Hold::new(false).0,
        }
    }

    /// Whether any output of this run reached the caller.
    pub fn released(&self) -> bool {
        tee::released(&self.hold)
    }

    /// Give the caller whatever was held back.
    pub fn release(&self) {
        tee::commit(&self.hold)
    }

    /// Forget the held output (the run is being retried).
    pub fn discard(&self) {
        tee::discard(&self.hold)
    }
}

/// Install signal blocking and the relay thread; call once, before `run`.
pub fn prepare_signals(child: &signals::ChildPid) -> std::io::Result<()> {
    signals::block().map_err(std::io::Error::from)?;
    signals::relay(child.clone())
}

/// Run the child to completion. An error means it could not be started.
pub fn run(
    spec: Spec,
    child_pid: &signals::ChildPid,
    watch: Option<Arc<dyn Watch>>,
) -> std::io::Result<Finished> {
    start(spec, child_pid, watch)?.wait()
}

/// A child the turn may still feed, silence or stop before waiting for it.
pub struct Running {
    child: std::process::Child,
    pid: i32,
    child_pid: signals::ChildPid,
    hold: tee::SharedHold,
    stdin: Option<std::process::ChildStdin>,
    /// `StdinPlan::Silent`'s pipe, closed once the child has ended.
    silent: Option<std::process::ChildStdin>,
    gate: Option<std::sync::mpsc::Receiver<()>>,
    out_thread: Option<std::thread::JoinHandle<Option<Observer>>>,
    err_thread: Option<std::thread::JoinHandle<Option<Observer>>>,
    /// The CLI's stdout was a terminal (see `terminal`).
    at_terminal: bool,
}

/// Start the child: its output is teed (held while `spec.hold`), its stdin
/// fed per `spec.stdin`.
pub fn start(
    spec: Spec,
    child_pid: &signals::ChildPid,
    watch: Option<Arc<dyn Watch>>,
) -> std::io::Result<Running> {
    // A stream the caller has on a terminal is a terminal for the CLI too.
    let caller = terminal::Caller::now();
    let ptys = match caller.any() {
        false => terminal::Ptys::default(),
        true => terminal::Ptys::like(caller).unwrap_or_else(|e| {
            crate::debug!("no terminal for the CLI ({e}): pipes");
            terminal::Ptys::default()
        }),
    };
    let mut cmd = command(&spec, &ptys)?;
    child_pid.spawning();
    crate::timeline::cli_started();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            child_pid.between();
            return Err(e);
        }
    };
    // Only the child holds the terminals' slaves: the masters end with it.
    drop(cmd);
    let pid = child.id() as i32;
    child_pid.set(pid);
    terminal::follow(&ptys);
    let at_terminal = ptys.out.is_some();
    let master = |pty: Option<terminal::Pty>| pty.map(|p| std::fs::File::from(p.master));
    let piped = |fd: Option<std::os::fd::OwnedFd>| fd.map(std::fs::File::from);
    let out_from = master(ptys.out).or_else(|| piped(child.stdout.take().map(Into::into)));
    let err_from = match ptys.shared {
        true => None,
        false => master(ptys.err).or_else(|| piped(child.stderr.take().map(Into::into))),
    };
    // The session hears each result before the caller does.
    let watch = match spec.live.clone() {
        Some(live) => Some(Arc::new(live::Watched { inner: watch, live }) as Arc<dyn Watch>),
        None => watch,
    };

    let (hold, gate) = tee::Hold::new(spec.hold);
    let streaming = matches!(spec.stdin, StdinPlan::Stream { .. });
    if matches!(spec.stdin, StdinPlan::Inherit | StdinPlan::Bytes(_)) {
        if let Some(w) = &watch {
            w.input_closed();
        }
    }
    let mut stdin = child.stdin.take();
    let silent = match spec.stdin {
        StdinPlan::Silent => stdin.take(),
        _ => None,
    };
    let mut gate = Some(gate);
    if !matches!(spec.stdin, StdinPlan::Manual | StdinPlan::Silent) {
        if let (Some(to), Some(gate)) = (stdin.take(), gate.take()) {
            let on_eof = streaming.then(|| watch.clone()).flatten();
            feed(to, spec.stdin.clone(), gate, on_eof, spec.live.clone());
        }
    }
    let err_thread = err_from.map(|from| {
        let hold = hold.clone();
        std::thread::spawn(move || tee::copy(from, tee::Stream::Err, hold, tee::Tap::default()))
    });
    let out_thread = out_from.map(|from| {
        let hold = hold.clone();
        let (observed, render) = match spec.render {
            true => (
                OutputFormat::StreamJson,
                Some(crate::runner::render::Render::new(spec.output)),
            ),
            false => (spec.output, None),
        };
        // Text output prints no figures.
        let own_cost = spec
            .own_cost
            .clone()
            .filter(|_| observed != OutputFormat::Text);
        let tap = tee::Tap {
            observer: Some(Observer::new(observed)),
            watch: watch.clone(),
            answers: spec.answers.clone(),
            pid,
            proof: spec.proof,
            render,
            own_cost,
            seal: spec.output == OutputFormat::StreamJson && watch.is_some(),
        };
        std::thread::spawn(move || tee::copy(from, tee::Stream::Out, hold, tap))
    });
    Ok(Running {
        child,
        pid,
        child_pid: child_pid.clone(),
        hold,
        stdin,
        silent,
        gate,
        out_thread,
        err_thread,
        at_terminal,
    })
}

/// The CLI's command: the spec's program, argv and variables, its output
/// to the terminals `ptys` made for it or to pipes, and it dies with the shim.
fn command(spec: &Spec, ptys: &terminal::Ptys) -> std::io::Result<Command> {
    let to_tty = |pty: &terminal::Pty| pty.slave.try_clone().map(Stdio::from);
    let stdout = match &ptys.out {
        Some(pty) => to_tty(pty)?,
        None => Stdio::piped(),
    };
    let stderr = match (&ptys.err, &ptys.out) {
        (Some(pty), _) => to_tty(pty)?,
        (None, Some(pty)) if ptys.shared => to_tty(pty)?,
        _ => Stdio::piped(),
    };
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(crate::env::GUARD, &spec.guard)
        .stdout(stdout)
        .stderr(stderr)
        .stdin(match spec.stdin {
            StdinPlan::Inherit => Stdio::inherit(),
            _ => Stdio::piped(),
        });
    let parent = nix::unistd::getpid();
    let portable = crate::platform::portable();
    // SAFETY: only async-signal-safe calls (sigaction, sigprocmask, prctl,
    // getppid, kill) run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            signals::reset_for_child()?;
            // The child dies with the shim, even by SIGKILL (where the
            // platform can say so; elsewhere when its pipes close). The shim
            // dies first only when killed outright (its other signals reach
            // the child and it waits): as the caller's kill would have
            // ended the CLI directly — at once. A SIGTERM would let the CLI
            // go on to make its request, billed for a caller who is gone.
            crate::platform::die_with_parent(Signal::SIGKILL, parent, portable)?;
            Ok(())
        });
    }
    Ok(cmd)
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The child's stdin, for `StdinPlan::Manual`.
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.stdin.take()
    }

    /// Opens when a held run commits (see [`StdinPlan::Stream`]).
    pub fn take_gate(&mut self) -> Option<std::sync::mpsc::Receiver<()>> {
        self.gate.take()
    }

    /// From now on the child's output reaches nobody.
    pub fn mute(&self) {
        tee::mute(&self.hold)
    }

    /// Ask the child to end (SIGTERM: the CLI writes its closing records and
    /// exits; it has not called the API if it never got a message).
    pub fn terminate(&self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), Signal::SIGTERM);
    }

    /// Wait for the child and its output to end.
    pub fn wait(mut self) -> std::io::Result<Finished> {
        drop(self.stdin.take());
        let status = self.child.wait();
        drop(self.silent.take());
        crate::timeline::cli_ended();
        self.child_pid.clear(self.pid);
        terminal::unfollow();
        let status = status?;
        let observer = self.out_thread.take().and_then(|t| t.join().ok()).flatten();
        if let Some(t) = self.err_thread.take() {
            let _ = t.join();
        }
        // A feeder still waiting on the caller's stdin is left behind on purpose.
        let exit = match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Signal::try_from(sig).map_or(Exit::Code(128 + sig), Exit::Signal),
            (None, None) => Exit::Code(1),
        };
        let mut observation = observer.map(Observer::finish).unwrap_or_default();
        observation.at_terminal = self.at_terminal;
        Ok(Finished {
            exit,
            observation,
            hold: self.hold,
        })
    }
}

/// Write the planned stdin on its own thread; EPIPE (the child stopped
/// reading) simply ends it. The caller's later input is forwarded only once
/// the gate opens (the run is committed), so a discarded attempt never eats
/// input meant for its retry.
pub fn feed(
    mut to: std::process::ChildStdin,
    plan: StdinPlan,
    gate: std::sync::mpsc::Receiver<()>,
    on_eof: Option<Arc<dyn Watch>>,
    live: Option<live::Live>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        forward(&mut to, plan, gate, live);
        if let Some(w) = on_eof {
            w.input_closed();
        }
    })
}

/// The feeder's work; returns when the input ends (or the child stops
/// reading).
fn forward(
    to: &mut std::process::ChildStdin,
    plan: StdinPlan,
    gate: std::sync::mpsc::Receiver<()>,
    live: Option<live::Live>,
) {
    let (first, pending) = match plan {
        StdinPlan::Inherit | StdinPlan::Manual | StdinPlan::Silent => return,
        StdinPlan::Bytes(b) => (b, None),
        StdinPlan::Stream { first, pending } => (first.into(), Some(pending)),
    };
    if to.write_all(&first).is_err() {
        return;
    }
    let Some(pending) = pending else { return };
    // Later messages of the session, each whole or cut (see `live`).
    let mut lines = live.map(live::Lines::new);
    let mut pass = |to: &mut std::process::ChildStdin, bytes: &[u8]| match lines.as_mut() {
        Some(l) if bytes.is_empty() => to.write_all(&l.finish()),
        Some(l) => to.write_all(&l.pass(bytes)),
        None => to.write_all(bytes),
    };
    if gate.recv().is_err() || pass(to, &pending).is_err() {
        return;
    }
    // Raw reads of fd 0: the prompt reader never used std's buffer.
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match nix::unistd::read(0, &mut buf) {
            Ok(0) => {
                // A last line without its newline, as it is.
                let _ = pass(to, &[]);
                break;
            }
            Ok(n) => {
                if pass(to, &buf[..n]).is_err() {
                    break;
                }
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
}
