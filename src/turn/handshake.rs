//! The Agent SDK handshake. The Python Agent SDK (and what is built on it)
//! writes `initialize` and waits — up to 60 s — for the CLI's answer before
//! it sends the user message. So the shim starts the CLI as the caller asked
//! at once (A, with a session id of the shim's choosing) and passes every
//! line to it: the caller gets A's genuine answers. When the user message
//! comes:
//!
//! - a fresh turn (or one the shim leaves alone) goes on in A: no time lost;
//! - a resumable one starts the resumed CLI (B), replays the caller's control
//!   lines to it, drops B's answers to them (A already answered), and sends
//!   the new message. When B proves the session (its `init` event), A — which
//!   never had a message, so never called the API — is silenced and ended.
//!   Should B be refused before that, A runs the turn as the caller asked.
//!
//! A caller that never sends a user message is served by A alone.
//!
//! When the caller's `initialize` was answered the same way by the last two
//! starts in the same scope, the shim gives that answer itself at once (see
//! [`super::initialize`]) and no A is started: the message follows at once
//! and the turn needs one CLI start, as without the shim.

use super::attempt::Attempt;
use super::initialize::{self, Remembered};
use super::launch::{Cold, Ctx, Launch};
use super::managed::{managed_turn, unchanged};
use super::watches::{LateWatch, Tandem};
use super::why::Reason;
use crate::events::Event;
use crate::prompt::{self, Prompt, RawStdin};
use crate::runner::{self, Exit, Finished, Running, Spec, StdinPlan, Watch};
use crate::{debug, error};
use std::ffi::OsString;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

/// Run a turn whose caller waits after its control lines (`before`).
pub(super) fn run(
    ctx: &Ctx<'_>,
    mut before: Vec<u8>,
    complete: usize,
    known: Option<Known>,
) -> Exit {
    let id = uuid::Uuid::new_v4().to_string();
    // With the caller's own `--resume` the session is the caller's; else A
    // gets the id a fresh turn would.
    let a_args = match ctx.managed.caller_resume {
        Some(_) => ctx.args.to_vec(),
        None => super::attempt::argv(
            &super::plan::Plan::Fresh {
                session: id.clone(),
                why: super::plan::Why::Forced,
            },
            ctx.args,
        ),
    };
    // A panic in the shim's own logic: the handshake as without the answer.
    let init = Known::of(known, &before[..complete])
        .or_else(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| Init::new(ctx, &before[..complete])))
                .ok()
                .flatten()
        })
        .map(Arc::new);
    let mut answered = false;
    if let Some(i) = &init {
        if let Some(line) = i.answer_now() {
            debug!("handshake: initialize answered at once");
            i.gave.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = runner::tee::write_all(runner::tee::Stream::Out, &line);
            if prompt::stdin_ready_within(MESSAGE_PATIENCE) {
                // Its message, or another control request it waits on (a
                // `set_model`): only the CLI can answer that.
                match prompt::next_line_is_user(&mut RawStdin, &mut before, complete) {
                    Ok(true) => return answered_at_once(ctx, before, complete, i),
                    Ok(false) => debug!(
                        "handshake: a control request before the message; starting the CLI as asked"
                    ),
                    Err(e) => debug!("handshake: reading the caller's next line: {e}"),
                }
            } else {
                debug!("handshake: no message yet; starting the CLI as asked");
            }
            // A caller that sends its message later (a session client
            // waiting for its user), or a control request first, finds the
            // CLI started, as without the shim: A, whose answer to
            // `initialize` the caller already had.
            answered = true;
        }
    }
    let late = Arc::new(LateWatch::default());
    let mut a = match runner::start(
        Spec {
            program: ctx.real.to_path_buf(),
            args: a_args,
            stdin: StdinPlan::Manual,
            output: ctx.managed.output,
            hold: false,
            guard: ctx.guard.to_owned(),
            answers: init
                .as_ref()
                .map(|i| i.answers(answered))
                .unwrap_or_default(),
            proof: Default::default(),
            env: Vec::new(),
            render: false,
            own_cost: None,
            live: Some(ctx.live.clone()),
        },
        &ctx.child,
        Some(late.clone() as Arc<dyn Watch>),
    ) {
        Ok(a) => a,
        Err(e) => crate::runner::exec::cannot_run(ctx.real, &e),
    };
    let mut stdin = a.take_stdin();
    write(&mut stdin, &before[..complete]);
    let read = prompt::read_after_waiting(&mut RawStdin, before, complete, &mut |line| {
        write(&mut stdin, line)
    });
    let prompt = match read {
        Ok(p) => p,
        Err(e) => {
            error!("reading the caller's input failed ({e}); the CLI answering it goes on");
            Prompt::None {
                bytes: Vec::new(),
                inherit: false,
            }
        }
    };
    let (sent, requests) = had(&prompt);
    let mut launch = Handshake {
        a: Some(a),
        stdin,
        late,
        id,
        sent,
        requests,
        init,
        live: ctx.live.clone(),
    };
    let original = super::attempt::original(&prompt, ctx.args, ctx.managed.input);
    if let Prompt::None { .. } = prompt {
        // Input ended before a user message: A has had everything.
        let reason = Reason::input_ended();
        return unchanged(ctx, &original, &prompt, reason, &mut launch);
    }
    managed_turn(ctx, &prompt, &original, &mut launch)
}

/// What A has had of the caller's input, and the control requests among
/// it: the lines before the user message, or, when input ended without
/// one, every complete line (a last one without its newline is still to go).
fn had(prompt: &Prompt) -> (usize, Vec<String>) {
    match prompt {
        Prompt::StreamJson { before, .. } => (before.len(), request_ids(before)),
        Prompt::None { bytes, .. } => (
            memchr::memrchr(b'\n', bytes).map_or(0, |nl| nl + 1),
            Vec::new(),
        ),
        _ => (0, Vec::new()),
    }
}

/// How long after the shim's answer to `initialize` the caller's message
/// may take to come for the turn to need no other CLI (a `query()` sends it
/// within milliseconds).
const MESSAGE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// The shim gave the answer to `initialize` itself and the caller's message
/// is coming, and the turn runs as one whose caller sent both
/// together — one CLI, which gets the `initialize` too and whose answer is
/// dropped (and heard).
fn answered_at_once(ctx: &Ctx<'_>, before: Vec<u8>, complete: usize, init: &Arc<Init>) -> Exit {
    let _ = ctx.answered.set(init.answers(true));
    let init_line = before[..complete].to_vec();
    let read = prompt::read_after_waiting(&mut RawStdin, before.clone(), complete, &mut |_| {});
    let prompt = read.unwrap_or_else(|e| {
        error!("reading the caller's input failed ({e}); running what came as it came");
        Prompt::None {
            bytes: before,
            inherit: false,
        }
    });
    let original = super::attempt::original(&prompt, ctx.args, ctx.managed.input);
    if let Prompt::None { .. } = prompt {
        let reason = Reason::input_ended();
        return unchanged(ctx, &original, &prompt, reason, &mut Cold);
    }
    // The caller has the answer: a live CLI may serve the turn.
    let sdk = init.sdk_init(&init_line, None);
    match super::warm::Warm::new(ctx, &prompt, Some(sdk)) {
        Some(mut w) => managed_turn(ctx, &prompt, &original, &mut w),
        None => managed_turn(ctx, &prompt, &original, &mut Cold),
    }
}

/// The caller's `initialize` (`lines`) when the shim would answer it itself
/// (kept with its lines, so the turn need not work it out again).
pub(super) fn answerable(
    real: &std::path::Path,
    output: crate::invocation::OutputFormat,
    args: &[OsString],
    lines: &[u8],
) -> Option<Known> {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        Init::of(real, output, args, lines)
            .filter(|i| i.answer_now().is_some())
            .map(|init| Known {
                lines: lines.to_vec(),
                init,
            })
    }))
    .ok()
    .flatten()
}

/// An `initialize` the shim can answer, and the lines it was read from.
pub(super) struct Known {
    lines: Vec<u8>,
    init: Init,
}

impl Known {
    /// Its `Init`, if it was read from exactly `lines`.
    fn of(known: Option<Known>, lines: &[u8]) -> Option<Init> {
        known.filter(|k| k.lines == lines).map(|k| k.init)
    }
}

/// A caller that sent its `initialize` and its message together (the
/// TypeScript SDK): every CLI's answer to it is heard, so the shim learns
/// it; once confirmed, a warm turn gives it (`Some`).
pub(super) fn together(
    ctx: &Ctx<'_>,
    before: &[u8],
    known: Option<Known>,
) -> Option<super::warm::SdkInit> {
    let init = Known::of(known, before)
        .or_else(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| Init::new(ctx, before)))
                .ok()
                .flatten()
        })
        .map(Arc::new)?;
    let _ = ctx.answered.set(init.answers(false));
    let answer = init.answer_now()?;
    Some(init.sdk_init(before, Some(answer)))
}

fn write(stdin: &mut Option<std::process::ChildStdin>, bytes: &[u8]) {
    if let Some(to) = stdin.as_mut() {
        if to.write_all(bytes).is_err() {
            // A stopped reading (it ended): what it would have read is moot.
            *stdin = None;
        }
    }
}

/// The ids of the control requests among `lines`.
fn request_ids(lines: &[u8]) -> Vec<String> {
    lines
        .split(|&b| b == b'\n')
        .filter_map(|l| match Event::parse(l)? {
            Event::ControlRequest(r) => r.request_id.map(|c| c.into_owned()),
            _ => None,
        })
        .collect()
}

struct Handshake {
    /// The CLI that answered the caller so far.
    a: Option<Running>,
    stdin: Option<std::process::ChildStdin>,
    late: Arc<LateWatch>,
    /// A's session id (when the shim chose it).
    id: String,
    /// Bytes of the caller's input A has had (its control lines).
    sent: usize,
    /// Control requests the caller sent before its message (replayed to B).
    requests: Vec<String>,
    /// The caller's lone `initialize`, whose answers are heard.
    init: Option<Arc<Init>>,
    live: runner::live::Live,
}

/// The caller's `initialize` in its start-up scope: answered at once when
/// the scope's answer is confirmed, and every CLI's answer heard.
pub(super) struct Init {
    id: String,
    /// The request without its id.
    request: serde_json::Value,
    data_dir: crate::data_dir::DataDir,
    key: String,
    last: Mutex<Option<Remembered>>,
    /// The shim gave the caller the answer.
    gave: std::sync::atomic::AtomicBool,
}

impl Init {
    pub(super) fn new(ctx: &Ctx<'_>, before: &[u8]) -> Option<Init> {
        Init::of(ctx.real, ctx.managed.output, ctx.args, before)
    }

    fn of(
        real: &std::path::Path,
        output: crate::invocation::OutputFormat,
        args: &[OsString],
        before: &[u8],
    ) -> Option<Init> {
        use crate::warm::fingerprint;
        if output != crate::invocation::OutputFormat::StreamJson {
            return None;
        }
        let asked = initialize::asked(before)?;
        let cwd = std::env::current_dir().ok()?;
        let data_dir = crate::data_dir::DataDir::open().ok()?;
        let config_dir = crate::env::claude_config_dir()?;
        let home = crate::env::user_home();
        // By content, whole: a file changed at the same path is another scope;
        // what cannot be read whole means the CLI answers.
        let files =
            fingerprint::StartUp::of(&cwd, home.as_deref(), &config_dir, args).contents()?;
        let binary = crate::store::caps::BinaryKey::of(real).ok()?.fingerprint();
        let key = initialize::key(&initialize::Scope {
            binary: &binary,
            cwd: &cwd,
            args,
            env: &fingerprint::environment(crate::env::all()),
            files: &files,
            request: &asked.request,
        });
        let last = initialize::load(&data_dir, &key);
        Some(Init {
            id: asked.id,
            request: asked.request.clone(),
            data_dir,
            key,
            last: Mutex::new(last),
            gave: Default::default(),
        })
    }

    /// The answer to give at once, when the scope's is confirmed: the CLI's,
    /// with the shim's pid (the process the caller started, which relays
    /// its signals to the CLI).
    fn answer_now(&self) -> Option<Vec<u8>> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let r = last.as_ref().filter(|r| r.confirmed)?;
        r.foretell(std::process::id() as i32, &self.id)
    }

    /// For a warm turn: `line` is the caller's `initialize`; `answer`, the
    /// one the shim gives (`None`: the caller has it).
    pub(super) fn sdk_init(
        self: &Arc<Self>,
        line: &[u8],
        answer: Option<Vec<u8>>,
    ) -> super::warm::SdkInit {
        super::warm::SdkInit {
            line: line.to_vec(),
            id: self.id.clone(),
            request: self.request.clone(),
            answer,
            heard: Some(self.hearer()),
        }
    }

    /// What a child's answers are watched for: `dropped` when the caller
    /// already has the answer.
    fn answers(self: &Arc<Self>, dropped: bool) -> runner::tee::Answers {
        let ids = vec![self.id.clone()];
        runner::tee::Answers {
            drop: if dropped { ids.clone() } else { Vec::new() },
            keep: if dropped { Vec::new() } else { ids },
            heard: Some(self.hearer()),
        }
    }

    /// Told a child's watched answers; learns from the one to `initialize`.
    fn hearer(self: &Arc<Self>) -> runner::tee::Heard {
        let me = self.clone();
        Arc::new(move |pid, line| me.heard(pid, line))
    }

    /// A CLI answered: learn from its answer to `initialize`, and say so when
    /// an answer the shim gave proves different from what the CLI says.
    fn heard(&self, pid: i32, line: &[u8]) {
        if !initialize::answers(line, &self.id) {
            return;
        }
        let given = self.gave.load(std::sync::atomic::Ordering::Relaxed);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let next = Remembered::after(last.as_ref(), line, pid, &self.id);
        let confirmed = next.as_ref().is_some_and(|r| r.confirmed);
        if given && !confirmed {
            error!(
                "the remembered answer to initialize differs from the CLI's; \
                 the next turns wait for the CLI's until two starts agree again"
            );
        }
        let saved = match &next {
            // Only a change is written: the confirmed answer heard again
            // (what differs is the pid and id it is foretold with) is none.
            Some(r) if r.confirmed && last.as_ref().is_some_and(|l| l.confirmed) => Ok(()),
            Some(r) => initialize::save(&self.data_dir, &self.key, r),
            None => initialize::forget(&self.data_dir, &self.key),
        };
        if let Err(e) = saved {
            error!("remembering the answer to initialize: {e:#}");
        }
        *last = next;
    }
}

impl Handshake {
    /// A runs the turn: it gets the rest of `attempt`'s input.
    fn continue_a(&mut self, attempt: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        if let Some(w) = watch.clone() {
            self.late.set(w);
        }
        let Some(a) = self.a.take() else {
            error!("the handshake's CLI is gone");
            return Finished::failed();
        };
        let (first, pending) = match &attempt.stdin {
            StdinPlan::Stream { first, pending } => (
                first[self.sent.min(first.len())..].to_vec(),
                pending.clone(),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        if let Some(to) = self.stdin.take() {
            let (open, gate) = std::sync::mpsc::channel();
            let _ = open.send(());
            let plan = StdinPlan::Stream { first, pending };
            runner::feed(to, plan, gate, watch, Some(self.live.clone()));
        }
        a.wait().unwrap_or_else(|e| {
            error!("waiting for the CLI: {e}");
            Finished::failed()
        })
    }
}

impl Launch for Handshake {
    fn fresh_id(&mut self) -> String {
        self.id.clone()
    }

    fn between(&mut self, _ctx: &Ctx<'_>) {}

    fn engine(&self) -> crate::store::runs::Engine {
        crate::store::runs::Engine::Handshake
    }

    fn planned(
        &mut self,
        ctx: &Ctx<'_>,
        _plan: &super::plan::Plan,
        _head: Option<&str>,
        attempt: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Finished {
        if !attempt.hold {
            // Fresh (A's session), the caller's own session, or unchanged.
            return self.continue_a(attempt, watch);
        }
        // A resume: B replays the handshake and takes the message.
        let a = Arc::new(Mutex::new(self.a.take()));
        let tandem = Arc::new(Tandem {
            inner: watch,
            a: a.clone(),
        });
        let spec = Spec {
            program: ctx.real.to_path_buf(),
            args: attempt.args.clone(),
            stdin: attempt.stdin.clone(),
            output: ctx.managed.output,
            hold: true,
            guard: ctx.guard.to_owned(),
            answers: runner::tee::Answers {
                drop: self.requests.clone(),
                keep: Vec::new(),
                heard: self.init.as_ref().map(Init::hearer),
            },
            proof: attempt.proof,
            env: attempt.env.clone(),
            render: attempt.render,
            own_cost: ctx.own_cost(attempt),
            live: Some(ctx.live.clone()),
        };
        debug!("handshake: resuming in a second CLI");
        let finished = runner::run(spec, &ctx.child, Some(tandem.clone() as Arc<dyn Watch>))
            .unwrap_or_else(|e| crate::runner::exec::cannot_run(ctx.real, &e));
        // A back, unless B proved itself and ended it.
        self.a = a.lock().unwrap_or_else(|p| p.into_inner()).take();
        finished
    }

    fn as_asked(
        &mut self,
        _ctx: &Ctx<'_>,
        attempt: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Finished {
        self.continue_a(attempt, watch)
    }
}

impl Drop for Handshake {
    fn drop(&mut self) {
        // A left over (B ran the turn, or the turn ended otherwise): end it.
        drop(self.stdin.take());
        if let Some(a) = self.a.take() {
            a.mute();
            a.terminate();
            let _ = a.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_of_control_lines_only() {
        let lines = concat!(
            r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}"#,
            "\n",
            r#"{"type":"control_response","response":{"request_id":"x"}}"#,
            "\n",
            r#"{"type":"control_request","request_id":"req_2","request":{"subtype":"set_model"}}"#,
            "\n",
            "garbage\n"
        );
        assert_eq!(request_ids(lines.as_bytes()), ["req_1", "req_2"]);
    }
}
