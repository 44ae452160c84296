//! Running a turn in a live process (see `crate::warm`): the conversation's
//! own when the keeper holds one that still fits, else a new one that stays
//! alive for the next turn. The shim writes the user message, relays stderr,
//! and prints stdout as a cold run would have printed it. Anything amiss
//! before a byte reached the caller: the turn runs cold.

use super::attempt::Attempt;
use super::plan::{How, Miss, Plan, Why};
use super::{Cold, Ctx, Launch};
use crate::data_dir::DataDir;
use crate::events::Event;
use crate::observe::Observer;
use crate::prompt::Prompt;
use crate::runner::render::Render;
use crate::runner::tee::{self, Stream};
use crate::runner::{Exit, Finished, Watch};
use crate::warm::client::{Keeper, Lent};
use crate::warm::protocol::{Request, Start};
use crate::warm::{self, fingerprint};
use crate::{debug, env, error, sessions};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Warm {
    keeper: Option<Keeper>,
    data_dir: DataDir,
    config_dir: PathBuf,
    flags: Vec<String>,
    key: String,
    env: Vec<(String, String)>,
    /// The environment's hash (with the process settings'), and the real
    /// binary, for the key.
    env_hash: String,
    /// The caller's umask, limits and niceness: a live CLI started for it
    /// gets them, and serves only callers with the same.
    settings: crate::runner::detached::Settings,
    binary: String,
    /// Its key among live CLIs that did not answer (`warm::unresponsive`).
    silent: String,
    /// What a start reads from files (fingerprinted again after a new
    /// process's first turn).
    start_up: fingerprint::StartUp,
    cwd: String,
    prompt: Prompt,
    engine: &'static str,
    /// The session id of a ready CLI reserved for this turn.
    adopted: Option<String>,
    /// An Agent SDK caller's `initialize` (stream-json both ways).
    sdk: Option<SdkInit>,
    /// Its request, as the key has it ("" for none).
    handshake: String,
    /// What the caller wrote during a warm attempt that ended before
    /// anything reached it: the cold run gets it.
    from_caller: Vec<u8>,
}

/// What a turn writes to a live process.
struct Input {
    /// The user line.
    line: Vec<u8>,
    /// An Agent SDK caller, who goes on writing after it.
    caller: Option<Caller>,
}

struct Caller {
    /// The caller's `initialize` (line, request id), for a process that never
    /// had one; its answer is dropped (and told to `heard`).
    init: Option<(Vec<u8>, String)>,
    /// The answer to `initialize` the caller gets with the first line.
    answer: Option<Vec<u8>>,
    heard: Option<tee::Heard>,
    /// What the caller wrote after its message, read ahead.
    pending: Vec<u8>,
}

/// An Agent SDK caller's `initialize`, as a warm turn deals with it: a live
/// process gets it once, when new, and its answer is never the caller's —
/// the caller's comes from the shim, which remembers the CLI's (see
/// `super::initialize`).
pub struct SdkInit {
    /// The caller's line, and its request id.
    pub line: Vec<u8>,
    pub id: String,
    /// The request without its id: part of the live process's key.
    pub request: serde_json::Value,
    /// The answer the shim gives with the turn's first line; `None`: the
    /// caller has had it (the handshake gave it).
    pub answer: Option<Vec<u8>>,
    /// Told a new live process's answer.
    pub heard: Option<tee::Heard>,
}

impl Warm {
    /// A warm launcher for this call, or `None` when it must run cold.
    pub fn new(
        ctx: &Ctx<'_>,
        args: &[OsString],
        prompt: &Prompt,
        sdk: Option<SdkInit>,
    ) -> Option<Warm> {
        if !env::warm() {
            return None;
        }
        if let Some(why) = warm::refusal(ctx.managed) {
            debug!("cold: {why}");
            return None;
        }
        if [1, 2]
            .iter()
            .any(|&fd| nix::unistd::isatty(fd).unwrap_or(false))
        {
            // The CLI prints for a terminal otherwise (error lines repeated on
            // stderr, retry notices, terminal sanitising) than for the pipes
            // a live process writes to.
            debug!("cold: stdout or stderr is a terminal");
            return None;
        }
        let text_ok = match prompt {
            // Over the CLI's limit for piped input (10 MB) a cold run fails
            // with its own message; a live process would take the line.
            Prompt::Stdin { bytes } if bytes.len() > STDIN_LIMIT => false,
            Prompt::Stdin { bytes } => std::str::from_utf8(bytes).is_ok(),
            Prompt::Positional { .. } => stdin_is_quiet(),
            // An Agent SDK caller: one user message, after nothing or after
            // the `initialize` the shim answers (other control requests
            // before the message would change the process for good).
            Prompt::StreamJson {
                before, more, text, ..
            } => {
                more.is_empty()
                    && text.is_some()
                    && match &sdk {
                        None => before.is_empty(),
                        Some(s) => *before == s.line,
                    }
            }
            _ => false,
        };
        if !text_ok {
            debug!("cold: the prompt's input cannot be handed to a live process");
            return None;
        }
        let parsed = warm::parse(args)?;
        let flags = warm::caller_flags(args, &parsed)?;
        if matches!(prompt, Prompt::StreamJson { .. }) {
            if let Some(why) = warm::sdk_refusal(&flags, sdk.as_ref().map(|s| &s.request)) {
                debug!("cold: {why}");
                return None;
            }
        }
        let handshake = sdk
            .as_ref()
            .map(|s| s.request.to_string())
            .unwrap_or_default();
        let mut env: Vec<(String, String)> = std::env::vars_os()
            .filter(|(k, _)| k != crate::env::GUARD)
            .map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect::<Option<_>>()?;
        env.push((crate::env::GUARD.into(), ctx.guard.into()));
        let cwd = std::env::current_dir().ok()?.to_str()?.to_owned();
        let data_dir = DataDir::open().ok()?;
        let config_dir = env::claude_config_dir()?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let start_up =
            fingerprint::StartUp::of(Path::new(&cwd), home.as_deref(), &config_dir, args);
        let Some(files) = start_up.state() else {
            debug!("cold: the files a start reads cannot be fingerprinted");
            return None;
        };
        let binary = crate::store::caps::BinaryKey::of(ctx.real)
            .ok()?
            .fingerprint();
        let silent = crate::warm::unresponsive::key(&binary, &cwd, &flags);
        if let Some(s) = crate::warm::unresponsive::active(&data_dir, &silent, crate::store::now())
        {
            debug!(
                "cold: a live CLI of {} did not answer here lately ({})",
                s.binary, s.why
            );
            return None;
        }
        let settings = crate::runner::detached::Settings::of_this_process();
        let env_hash = format!(
            "{}-{}",
            fingerprint::environment(
                env.iter()
                    .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            ),
            settings.fingerprint()
        );
        let key = warm::key(&warm::KeyParts {
            handshake: &handshake,
            flags: &flags,
            env: &env_hash,
            cwd: &cwd,
            binary: &binary,
            files: &files,
        });
        Some(Warm {
            keeper: None,
            data_dir,
            config_dir,
            flags,
            key,
            env,
            env_hash,
            settings,
            binary,
            silent,
            start_up,
            cwd,
            prompt: prompt.clone(),
            engine: "cold",
            adopted: None,
            sdk,
            handshake,
            from_caller: Vec::new(),
        })
    }

    /// Take back what a live process killed mid-turn wrote to `session`.
    fn undo_turn(&self, session: &str, size_before: Option<u64>) {
        let Some(file) = sessions::find(&self.config_dir, session) else {
            return;
        };
        match sessions::undo_turn(&file, size_before) {
            Ok(true) => debug!("warm: took back the killed turn's records of {session}"),
            Ok(false) => {}
            Err(e) => error!("taking back the killed turn's records of {session}: {e}"),
        }
    }

    /// A new live CLI said nothing: this binary's turns here run cold for a
    /// while, at once (see `warm::unresponsive`).
    fn remember_silence(&self, ctx: &Ctx<'_>) {
        let binary = ctx.real.to_string_lossy().into_owned();
        error!(
            "warm turns off for an hour for {binary} in {}: a new live CLI said nothing in \
             {} s (a wrapper that buffers its input, or a release that does not speak \
             stream-json); those turns run cold. `claude-shim warm stop` tries again now",
            self.cwd,
            START_PATIENCE.as_secs()
        );
        let s = crate::warm::unresponsive::Silent {
            binary,
            cwd: self.cwd.clone(),
            since: crate::store::now(),
            why: format!(
                "a new live CLI said nothing in {} s",
                START_PATIENCE.as_secs()
            ),
        };
        if let Err(e) = crate::warm::unresponsive::record(&self.data_dir, &self.silent, &s) {
            error!("remembering the live CLI that did not answer: {e}");
        }
    }

    fn file_size(&self, session: &str) -> Option<u64> {
        let f = sessions::find(&self.config_dir, session)?;
        std::fs::metadata(f).ok().map(|m| m.len())
    }

    /// The key as of now (files a start reads, fingerprinted afresh).
    fn key_now(&self) -> Option<String> {
        let files = self.start_up.state()?;
        Some(warm::key(&warm::KeyParts {
            handshake: &self.handshake,
            flags: &self.flags,
            env: &self.env_hash,
            cwd: &self.cwd,
            binary: &self.binary,
            files: &files,
        }))
    }

    fn keeper(&mut self) -> Option<&mut Keeper> {
        if self.keeper.is_none() {
            self.keeper = Keeper::connect(&self.data_dir, true);
        }
        self.keeper.as_mut()
    }

    /// Run the turn in `lent`. `None`: it ended before anything reached
    /// the caller (run it cold).
    fn run(
        &mut self,
        ctx: &Ctx<'_>,
        lent: Lent,
        plan: &Plan,
        attempt: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Option<Finished> {
        let bytes = attempt.prompt_bytes(&self.prompt);
        let input = match &self.prompt {
            // A stream-json caller (the Agent SDKs): its own user line (the
            // history cut from it), its `initialize` before it in a process
            // that never had one, and then whatever it goes on writing.
            Prompt::StreamJson { .. } => {
                let mut line = bytes;
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                let pending = match &attempt.stdin {
                    crate::runner::StdinPlan::Stream { pending, .. } => pending.clone(),
                    _ => Vec::new(),
                };
                let sdk = self.sdk.as_ref();
                Input {
                    line,
                    caller: Some(Caller {
                        init: sdk
                            .filter(|_| lent.turns == 0)
                            .map(|s| (s.line.clone(), s.id.clone())),
                        answer: sdk.and_then(|s| s.answer.clone()),
                        heard: sdk.and_then(|s| s.heard.clone()),
                        pending,
                    }),
                }
            }
            _ => Input {
                line: warm::user_line(&String::from_utf8(bytes).ok()?),
                caller: None,
            },
        };
        // A resume in a new process is not proven until its init event.
        let held = lent.fresh && matches!(plan, Plan::Resume { .. });
        let (hold, _gate) = tee::Hold::new(held);
        let size_before = self.file_size(plan.target_session());
        ctx.child.set(lent.pid);
        ctx.child.interrupt_myself(true);
        let relayed = relay(
            ctx,
            &lent,
            &input,
            &hold,
            ctx.managed.output,
            watch.as_deref(),
        );
        self.from_caller = relayed.from_caller.clone();
        ctx.child.interrupt_myself(false);
        ctx.child.clear(lent.pid);
        if relayed.unresponsive {
            self.remember_silence(ctx);
        }
        // Not kept for another turn: a process whose turn was interrupted (the
        // session moved on without it), or a new one that said anything on
        // stderr (a cold start would say it again every turn; it would not).
        let spoke_on_stderr = lent.fresh && relayed.stderr > 0;
        // Nor one the caller sent a control request mid-turn (a model, a
        // permission mode, an interrupt: it would carry them over).
        let healthy = relayed.exit.is_some()
            && !relayed.signalled
            && !relayed.interrupted
            && !relayed.caller_controlled
            && !spoke_on_stderr;
        // Ended mid-turn after output reached the caller: end as it did.
        let died = match (relayed.exit, relayed.signalled) {
            (None, false) => self.keeper.as_mut().and_then(Keeper::ended),
            _ => None,
        };
        let head = relayed
            .observation
            .assistant_uuids
            .last()
            .cloned()
            .or_else(|| {
                sessions::find(&self.config_dir, plan.target_session())
                    .and_then(|f| sessions::last_assistant_uuid(&f))
            });
        // A new process's own start may have written files a start reads
        // (its first in a project): it knows them, so take the key anew.
        let key = (healthy && lent.fresh).then(|| self.key_now()).flatten();
        let size = self.file_size(plan.target_session());
        if let Some(k) = self.keeper.as_mut() {
            k.done(healthy, head, key, size);
        }
        drop(lent);
        let exit = match (relayed.exit, relayed.signalled_by) {
            (_, Some(sig)) => cold_exit_on(sig),
            (Some(code), None) => Exit::Code(code),
            (None, None) if relayed.wrote == 0 || !tee::released(&hold) => {
                // Nothing reached the caller: never worse than cold, which
                // must find the session as it was (once the process is gone).
                debug!("warm: the live process ended before its result; running cold");
                if died.is_some() {
                    self.undo_turn(plan.target_session(), size_before);
                }
                return None;
            }
            (None, None) => died.unwrap_or(Exit::Code(1)),
        };
        // The turn (execute) commits or discards what is held.
        Some(Finished::new(exit, relayed.observation, hold))
    }
}

/// Below the CLI's own limit for piped stdin (10 MB, checked on 2.1.330):
/// anything larger runs cold, where the CLI makes its check.
const STDIN_LIMIT: usize = 9 << 20;

/// How a cold CLI ends when the caller signals it mid-turn (checked on
/// 2.1.330): SIGINT → exit 0, SIGTERM and SIGHUP → 128 + n (it handles
/// them); SIGQUIT, SIGUSR1 and SIGUSR2 it does not handle: it dies by them.
fn cold_exit_on(sig: nix::sys::signal::Signal) -> Exit {
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
const START_PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

struct Relayed {
    /// The turn's exit status, from its result.
    exit: Option<i32>,
    observation: crate::observe::Observation,
    /// The caller's signal stopped the turn (the process ends by it).
    signalled: bool,
    signalled_by: Option<nix::sys::signal::Signal>,
    /// The caller's SIGINT interrupted the turn (the process lives on).
    interrupted: bool,
    /// Bytes that reached (or were held for) the caller.
    wrote: usize,
    /// Bytes the process printed on stderr.
    stderr: usize,
    /// A new process said nothing in [`START_PATIENCE`] (it was ended).
    unresponsive: bool,
    /// An Agent SDK caller sent a control request after its message.
    caller_controlled: bool,
    /// What the Agent SDK caller wrote after its message (read ahead and
    /// since), passed on to the process.
    from_caller: Vec<u8>,
}

/// How long an interrupted live process may take to print its result.
const INTERRUPT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

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
fn relay(
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
    if let (Some(c), Some(side)) = (caller, side.as_mut()) {
        first.extend_from_slice(&c.pending);
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
    let started = std::time::Instant::now();
    let mut spoke = false;
    let kill = || {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(lent.pid), Signal::SIGKILL);
    };
    // SAFETY: fd 0 outlives this call.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    'turn: loop {
        // A new process that never answers a stream-json message (not a CLI
        // that speaks it) must not hang the turn: it goes, the turn runs cold.
        if lent.fresh && !spoke && started.elapsed() > START_PATIENCE {
            debug!("warm: the new live CLI said nothing in {START_PATIENCE:?}; ending it");
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
                    // The caller stopped the turn: a cold CLI prints nothing more.
                    out.signalled = true;
                    out.signalled_by = sig;
                    stopped_at = Some(std::time::Instant::now());
                    tee::mute(hold);
                    if idle {
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
        let mut fds = vec![
            PollFd::new(lent.stdout.as_fd(), PollFlags::POLLIN),
            PollFd::new(lent.stderr.as_fd(), PollFlags::POLLIN),
        ];
        if reading_caller {
            fds.push(PollFd::new(stdin, PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::from(100u16)) {
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
                    if let Some(nl) = side.end(&mut out) {
                        let _ = (&lent.stdin).write_all(nl);
                    }
                }
                Ok(n) => {
                    // The process reads on: a failed write means it is gone,
                    // which its stdout says.
                    let _ = (&lent.stdin).write_all(&buf[..n]);
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
                tee::pass(Stream::Out, &rendered.out, hold, proven);
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
    }
    if ctx.child.signalled() && !out.signalled && !out.interrupted {
        // The caller's signal ended the process between the check above and
        // its end of output: the turn was stopped all the same (never rerun).
        out.signalled = true;
        out.signalled_by = ctx.child.last_signal();
    }
    if out.signalled {
        // Let it end (the keeper reaps it); its last words are not ours.
        out.exit = None;
    }
    out.observation = observer.finish();
    out
}

/// Whether stdin has nothing for the CLI: a terminal, /dev/null, or a pipe
/// or file at its end. (A cold `-p "prompt"` appends piped stdin to the
/// prompt; such calls run cold.)
fn stdin_is_quiet() -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    // SAFETY: fd 0 outlives this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let Ok(meta) = nix::sys::stat::fstat(0) else {
        return true;
    };
    let kind =
        nix::sys::stat::SFlag::from_bits_truncate(meta.st_mode) & nix::sys::stat::SFlag::S_IFMT;
    if kind == nix::sys::stat::SFlag::S_IFCHR {
        return true;
    }
    if kind == nix::sys::stat::SFlag::S_IFREG {
        return meta.st_size == 0;
    }
    // A pipe: quiet only if it is at EOF right now (never read data).
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(1) => fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP) && !r.contains(PollFlags::POLLIN)),
        _ => false,
    }
}

impl Launch for Warm {
    fn engine(&self) -> &'static str {
        self.engine
    }

    fn planned(
        &mut self,
        ctx: &Ctx<'_>,
        plan: &Plan,
        head: Option<&str>,
        a: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Finished {
        self.engine = "cold";
        let adopted = self
            .adopted
            .take()
            .is_some_and(|s| s == plan.target_session());
        self.warm_or_cold(ctx, plan, head, a, watch, adopted)
    }

    fn as_asked(&mut self, ctx: &Ctx<'_>, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        self.engine = "cold";
        Cold.as_asked(ctx, a, watch)
    }

    fn adopt(&mut self) -> Option<String> {
        if !env::warm_ready() {
            return None;
        }
        let key = self.key.clone();
        let session = self.keeper()?.ready(&key)?;
        debug!("warm: a ready CLI takes this new conversation ({session})");
        self.adopted = Some(session.clone());
        Some(session)
    }
}

impl Warm {
    fn start(&self, ctx: &Ctx<'_>, args: Vec<String>) -> Start {
        Start {
            program: ctx.real.to_string_lossy().into_owned(),
            args,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            settings: self.settings.clone(),
        }
    }

    /// [`Launch::planned`]: in a live CLI where one can serve, else cold.
    /// `adopted`: the plan's session is a ready CLI's (ended before any
    /// cold run, which would otherwise meet it as a second writer).
    fn warm_or_cold(
        &mut self,
        ctx: &Ctx<'_>,
        plan: &Plan,
        head: Option<&str>,
        a: &Attempt,
        watch: Option<Arc<dyn Watch>>,
        adopted: bool,
    ) -> Finished {
        let cold = |this: &mut Warm, watch| {
            // A ready CLI reserved for this session must not meet the cold
            // run as a second writer: `release` ends it (and waits).
            if adopted {
                debug!("warm: the ready CLI is not used; ending it");
                if let Some(k) = this.keeper() {
                    k.release(plan.target_session());
                }
            }
            // What the caller wrote meanwhile was read by the shim: the
            // cold run gets it first.
            match std::mem::take(&mut this.from_caller) {
                read if read.is_empty() => Cold.planned(ctx, plan, head, a, watch),
                read => {
                    let mut a = a.clone();
                    if let crate::runner::StdinPlan::Stream { pending, .. } = &mut a.stdin {
                        *pending = read;
                    }
                    Cold.planned(ctx, plan, head, &a, watch)
                }
            }
        };
        let conversation = match plan {
            // A prompt in no transcript dialect is most likely a one-shot
            // call: it runs exactly as without the shim, and no live CLI is
            // kept for a next turn that may never come.
            Plan::Fresh {
                why: Why::Missed(Miss::NotRecognised(_)),
                ..
            } => false,
            Plan::Fresh { .. } | Plan::Resume { .. } => true,
            Plan::Caller { .. } | Plan::AsIs { .. } | Plan::Continue { .. } => false,
        };
        // A transcript that may be refused as too long is held past that
        // point: a cold run's hold does that.
        if !conversation || a.proof == crate::runner::Proof::Answer {
            return cold(self, watch);
        }
        let in_place = matches!(
            plan,
            Plan::Resume {
                how: How::InPlace,
                ..
            }
        );
        let session_flags = super::attempt::session_flags(plan);
        let Some(args) = warm::live_args(&session_flags, &self.flags) else {
            return cold(self, watch);
        };
        let req = Request::Turn {
            session: plan.target_session().to_owned(),
            head: if in_place {
                head.map(str::to_owned)
            } else {
                None
            },
            key: self.key.clone(),
            file_size: match in_place {
                true => self.file_size(plan.target_session()),
                false => None,
            },
            start: Some(Box::new(self.start(ctx, args))),
            ready: env::warm_ready()
                .then(|| {
                    let id =
                        ["--session-id", &uuid::Uuid::new_v4().to_string()].map(OsString::from);
                    warm::live_args(&id, &self.flags)
                })
                .flatten()
                .map(|args| Box::new(self.start(ctx, args))),
        };
        let lent = match self.keeper().map(|k| k.turn(&req)) {
            Some(Ok(lent)) => lent,
            Some(Err(why)) => {
                debug!("warm: cold, because {why}");
                return cold(self, watch);
            }
            None => return cold(self, watch),
        };
        let fresh = lent.fresh;
        match self.run(ctx, lent, plan, a, watch.clone()) {
            Some(f) => {
                self.engine = match (fresh, adopted) {
                    (true, true) => "ready",
                    (true, false) => "live",
                    (false, _) => "warm",
                };
                f
            }
            None => cold(self, watch),
        }
    }
}

/// Before a cold run writes to `session` in place: end its live process,
/// if a keeper holds one (it would no longer know the session).
pub fn release(session: &str) {
    let Ok(Some(dir)) = DataDir::existing() else {
        return;
    };
    if !crate::warm::keeper::socket(&dir).exists() {
        return;
    }
    if let Some(mut k) = Keeper::connect(&dir, false) {
        if !k.release(session) {
            debug!("warm: the keeper could not release {session}");
        }
    }
}
