//! Running a turn in a live process (see `crate::warm`): the conversation's
//! own when the keeper holds one that still fits, else a new one that stays
//! alive for the next turn. The shim writes the user message, relays stderr,
//! and prints stdout as a cold run would have printed it. Anything amiss
//! before a byte reached the caller: the turn runs cold.

use super::attempt::Attempt;
use super::launch::{Cold, Ctx, Launch};
use super::plan::{How, PinMiss, Plan, Why};
use super::relay::{cold_exit_on, relay, start_patience, Caller, Input};
use crate::data_dir::DataDir;
use crate::prompt::Prompt;
use crate::runner::tee;
use crate::runner::{Exit, Finished, Watch};
use crate::store::runs::Engine;
use crate::warm::client::{Keeper, Lent};
use crate::warm::protocol::{Request, Start};
use crate::warm::{self, fingerprint};
use crate::{debug, env, error, sessions};
use std::ffi::OsString;
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
    engine: Engine,
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

/// Whether the prompt's input can be handed to a live process as a cold
/// CLI would read it.
fn handed_over_whole(prompt: &Prompt, sdk: Option<&SdkInit>) -> bool {
    match prompt {
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
                && match sdk {
                    None => before.is_empty(),
                    Some(s) => *before == s.line,
                }
        }
        _ => false,
    }
}

impl Warm {
    /// A warm launcher for this call, or `None` when it must run cold.
    pub fn new(ctx: &Ctx<'_>, prompt: &Prompt, sdk: Option<SdkInit>) -> Option<Warm> {
        if !env::warm() {
            return None;
        }
        if let Some(why) = warm::refusal(ctx.managed, env::warm_text()) {
            debug!("cold: {}", why.text);
            let _ = ctx.cold.set(why);
            return None;
        }
        if crate::runner::terminal::Caller::now().any() {
            // The CLI prints for a terminal otherwise (error lines repeated on
            // stderr, retry notices, terminal sanitising) than for the pipes
            // a live process writes to.
            debug!("cold: stdout or stderr is a terminal");
            return None;
        }
        if !handed_over_whole(prompt, sdk.as_ref()) {
            debug!("cold: the prompt's input cannot be handed to a live process");
            return None;
        }
        let parsed = warm::parse(ctx.args)?;
        let flags = warm::caller_flags(ctx.args, &parsed)?;
        if matches!(prompt, Prompt::StreamJson { .. }) {
            if let Some(why) = warm::sdk_refusal(&flags, sdk.as_ref().map(|s| &s.request)) {
                debug!("cold: {}", why.text);
                let _ = ctx.cold.set(why);
                return None;
            }
        }
        let handshake = sdk
            .as_ref()
            .map(|s| s.request.to_string())
            .unwrap_or_default();
        let mut env: Vec<(String, String)> = env::all()
            .filter(|(k, _)| k != crate::env::GUARD)
            .map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect::<Option<_>>()?;
        env.push((crate::env::GUARD.into(), ctx.guard.into()));
        let cwd = std::env::current_dir().ok()?.to_str()?.to_owned();
        let data_dir = DataDir::open().ok()?;
        let config_dir = env::claude_config_dir()?;
        let home = env::user_home();
        let start_up =
            fingerprint::StartUp::of(Path::new(&cwd), home.as_deref(), &config_dir, ctx.args);
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
            engine: Engine::Cold,
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
            start_patience().as_secs()
        );
        let s = crate::warm::unresponsive::Silent {
            binary,
            cwd: self.cwd.clone(),
            since: crate::store::now(),
            why: format!(
                "a new live CLI said nothing in {} s",
                start_patience().as_secs()
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
        // Nor one whose turn started work that goes on in the background (a
        // command, an agent, a monitor, a wake-up): it would call the model
        // when that work ends, between the caller's turns (issue 49). Killed
        // (its input closed, it would wait for the work and call the model),
        // it calls nobody; the session stays as the caller saw it.
        let background = relayed.observation.background;
        if background {
            debug!("warm: the turn left work in the background; its CLI is not kept");
        }
        let healthy = relayed.exit.is_some()
            && !relayed.signalled
            && !relayed.interrupted
            && !relayed.caller_controlled
            && !spoke_on_stderr
            && !background;
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
            k.done((healthy, background), head, key, size);
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

/// How long a pipe on stdin, open and empty, may take to reach its end
/// before the call runs cold. A caller that starts `claude -p "prompt"` and
/// then closes the pipe it gave as stdin closes it a moment after the shim
/// looks (under load, tens of ms): without patience the conversation's first
/// turn ran cold, and the next one started a live CLI (`resumed, live`,
/// issue 38). A pipe still open after it costs the call no more than this:
/// the CLI itself waits 3 s for such a pipe's data.
const STDIN_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether stdin has nothing for the CLI: a terminal, /dev/null, or a pipe
/// or file at its end (a pipe given [`STDIN_PATIENCE`] to get there). (A cold
/// `-p "prompt"` appends piped stdin to the prompt; such calls run cold.)
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
    // A pipe: quiet only if it reaches its end with no data (never read).
    let deadline = std::time::Instant::now() + STDIN_PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::ZERO);
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        return match poll(&mut fds, timeout) {
            Ok(1) => fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLHUP) && !r.contains(PollFlags::POLLIN)),
            Err(nix::errno::Errno::EINTR) => continue,
            _ => false,
        };
    }
}

impl Launch for Warm {
    fn engine(&self) -> Engine {
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
        self.engine = Engine::Cold;
        let adopted = self
            .adopted
            .take()
            .is_some_and(|s| s == plan.target_session());
        self.warm_or_cold(ctx, plan, head, a, watch, adopted)
    }

    fn as_asked(&mut self, ctx: &Ctx<'_>, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        self.engine = Engine::Cold;
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
                why: Why::Missed(PinMiss::NotRecognised(_)),
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
        // Not connected yet (the usual warm turn): the turn goes with the hello.
        let asked = match self.keeper.as_mut() {
            Some(k) => Some(k.turn(&req)),
            None => Keeper::connect_for_turn(&self.data_dir, &req).map(|(k, lent)| {
                self.keeper = Some(k);
                lent
            }),
        };
        let lent = match asked {
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
                    (true, true) => Engine::Ready,
                    (true, false) => Engine::Live,
                    (false, _) => Engine::Warm,
                };
                f
            }
            None => cold(self, watch),
        }
    }
}
