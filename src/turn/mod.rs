//! One managed turn, as stages in flow order:
//!
//! 1. [`understand`]: the prompt as a conversation;
//! 2. [`lookup`]: identity, pins, the session file, the in-place lease;
//! 3. [`plan`]: the pure decision, and [`why`] it was taken;
//! 4. [`attempt`]: argv and input for the plan (pure);
//! 5. run: the real CLI, its output teed and observed (`crate::runner`);
//! 6. [`record`]: the pin at the result, the run in the log.
//!
//! Launched cold, warm ([`warm`]: a live CLI's next turn) or after the Agent
//! SDK handshake ([`handshake`], with the answer to `initialize` it may give
//! itself: [`initialize`]).
//!
//! Every failure inside the shim degrades to running the caller's original
//! argv and input, and so does a panic in the shim's own logic.

pub mod attempt;
pub mod content;
pub mod handshake;
pub mod initialize;
pub mod lookup;
pub mod plan;
pub mod record;
mod relay;
pub mod understand;
pub mod warm;
pub mod why;

use crate::invocation::Managed;
use crate::prompt::{self, Prompt};
use crate::runner::{self, signals::ChildPid, Exit, Finished, Spec, Watch};
use crate::store::pins::Ownership;
use crate::store::runs::{Kind, Run, Spent};
use crate::store::Store;
use crate::{debug, env, error, sessions};
pub use attempt::Attempt;
use lookup::{Mode, Place};
use plan::{How, Plan, Why};
use record::{PinContext, Recorder};
use std::ffi::OsString;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use why::Reason;

pub fn run(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> ! {
    turn(real, args, managed, guard).reproduce()
}

/// What the turn runs with, whatever its plan.
pub struct Ctx<'a> {
    real: &'a Path,
    guard: &'a str,
    child: ChildPid,
    managed: &'a Managed,
    /// Answers the caller already had (the shim gave them): every run's
    /// are dropped (see `handshake`).
    answered: std::sync::OnceLock<runner::tee::Answers>,
}

impl Ctx<'_> {
    fn spawn(&self, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        let spec = Spec {
            program: self.real.to_path_buf(),
            args: a.args.clone(),
            stdin: a.stdin.clone(),
            output: self.managed.output,
            hold: a.hold,
            guard: self.guard.to_owned(),
            answers: self.answered.get().cloned().unwrap_or_default(),
            proof: a.proof,
            env: a.env.clone(),
            render: a.render,
            own_cost: self.own_cost(a),
        };
        runner::run(spec, &self.child, watch)
            .unwrap_or_else(|e| crate::runner::exec::cannot_run(self.real, &e))
    }
}

impl Ctx<'_> {
    /// What the caller's result should say of the cost, for attempt `a`.
    fn own_cost(&self, a: &Attempt) -> Option<crate::cost::Own> {
        let session = a.own_cost.as_deref()?;
        let config = env::claude_config_dir()?;
        Some(crate::cost::Own::resuming(&config, session))
    }
}

/// How a turn's runs start: a new CLI per run ([`Cold`]), or through a CLI
/// that already answered an Agent SDK caller ([`handshake`]).
pub trait Launch {
    /// The session id a fresh run gets: a new one, unless the launch has
    /// already started a CLI with its own (the handshake).
    fn fresh_id(&mut self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
    /// The session id of a CLI already started for a new conversation of
    /// this scope, reserved for this turn (see `warm::keeper::READY_FOR`).
    fn adopt(&mut self) -> Option<String> {
        None
    }
    /// Between a refused attempt and the rerun.
    fn between(&mut self, ctx: &Ctx<'_>) {
        ctx.child.between();
    }
    /// How the last run ran, for the runs log: `cold`, `warm` (a live
    /// process's next turn), `live` (a new live process), `handshake`.
    fn engine(&self) -> &'static str {
        "cold"
    }
    /// Run the planned attempt (`head`: the session's head it continues).
    fn planned(
        &mut self,
        ctx: &Ctx<'_>,
        plan: &Plan,
        head: Option<&str>,
        a: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Finished;
    /// Run as the caller asked (its input; its argv with a fresh session's
    /// flags in front, or untouched).
    fn as_asked(&mut self, ctx: &Ctx<'_>, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished;
}

/// Every run a new CLI process.
pub struct Cold;

impl Launch for Cold {
    fn planned(
        &mut self,
        ctx: &Ctx<'_>,
        plan: &Plan,
        _head: Option<&str>,
        a: &Attempt,
        watch: Option<Arc<dyn Watch>>,
    ) -> Finished {
        if let Plan::Resume {
            session,
            how: How::InPlace,
        } = plan
        {
            // A live process of this session would no longer know it.
            warm::release(session);
        }
        ctx.spawn(a, watch)
    }

    fn as_asked(&mut self, ctx: &Ctx<'_>, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        ctx.spawn(a, watch)
    }
}

fn turn(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> Exit {
    debug!("turn: managed");
    // Nothing of a data directory that is not private is read, written or
    // connected to (its config, store, keeper, remembered answers): the
    // call runs as without the shim, and `doctor` says why.
    if let Err(why) = crate::data_dir::DataDir::open() {
        debug!("data directory refused ({why}); passing through");
        crate::runner::exec::exec_or_die(real, &args, guard);
    }
    runner::signals::ignore_file_size_limit();
    let child = ChildPid::default();
    if let Err(e) = runner::prepare_signals(&child) {
        error!("signal setup failed ({e}); passing through");
        crate::runner::exec::exec_or_die(real, &args, guard);
    }
    // A caller that turned persistence off gets a session the shim owns:
    // its runs go without the flag (see `Ownership::Ephemeral`).
    let session_args = match managed.ephemeral {
        true => crate::argv::without(&args, &managed.args, "no-session-persistence"),
        false => args.clone(),
    };
    let parsed = match managed.ephemeral {
        true => crate::argv::parse(&session_args).unwrap_or_else(|_| managed.args.clone()),
        false => managed.args.clone(),
    };
    let output = managed.output;
    let mut known = None;
    let mut answered = |lines: &[u8]| {
        known = handshake::answerable(real, output, &session_args, lines);
        known.is_some()
    };
    let prompt = match prompt::read_knowing(&parsed, managed.input, &mut answered) {
        Ok(p) => p,
        Err(e) => {
            error!("reading the prompt failed ({e}); passing through");
            crate::runner::exec::exec_or_die(real, &args, guard);
        }
    };
    let managed = Managed {
        args: parsed,
        ..managed
    };
    let ctx = Ctx {
        real,
        guard,
        child,
        managed: &managed,
        answered: Default::default(),
    };
    match prompt {
        Prompt::Waiting { before, complete } => {
            handshake::run(&ctx, &session_args, before, complete, known)
        }
        prompt => {
            let original = attempt::original(&prompt, &args, managed.input);
            let sdk = match &prompt {
                Prompt::StreamJson { before, .. } if !before.is_empty() => {
                    handshake::together(&ctx, &session_args, before, known)
                }
                _ => None,
            };
            match warm::Warm::new(&ctx, &session_args, &prompt, sdk) {
                Some(mut w) => managed_turn(&ctx, &prompt, &session_args, &original, &mut w),
                None => managed_turn(&ctx, &prompt, &session_args, &original, &mut Cold),
            }
        }
    }
}

/// Decide and run a turn whose prompt has been read. `original` is the
/// caller's invocation exactly as it came (what runs when the shim cannot
/// help).
pub fn managed_turn(
    ctx: &Ctx<'_>,
    prompt: &Prompt,
    args: &[OsString],
    original: &Attempt,
    launch: &mut dyn Launch,
) -> Exit {
    let new_id = launch.fresh_id();
    let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        prepare(ctx, args, prompt, new_id, &mut || launch.adopt())
    }));
    match prepared {
        Ok(Ok(Some(p))) => execute(ctx, p, prompt, args, launch),
        Ok(Ok(None)) => {
            let reason = match prompt {
                Prompt::None { inherit: false, .. } if !prompt.is_empty() => {
                    Reason::no_user_message(prompt::CONTROL_PATIENCE.as_millis() as u64)
                }
                _ => Reason::not_text(),
            };
            unchanged(ctx, original, prompt, reason, launch)
        }
        Ok(Err(e)) => {
            error!("shim bypassed: {e:#}");
            let reason = Reason::store_unavailable(&format!("{e:#}"));
            unchanged(ctx, original, prompt, reason, launch)
        }
        Err(_) => unchanged(ctx, original, prompt, Reason::internal_error(), launch),
    }
}

/// A turn decided: everything `execute` needs.
struct Prepared {
    place: Place,
    plan: Plan,
    reason: Reason,
    attempt: Attempt,
    ctx: PinContext,
    /// The in-place lease, taken by lookup.
    lease: Option<lookup::LeaseGuard>,
    head_before: Option<String>,
    /// A fresh turn past the compaction ceiling may be refused as too long:
    /// then this resume of the compacted session runs, and its head.
    resume_instead: Option<(Plan, Attempt, Option<String>)>,
    /// Which turn this is (its attempts are recorded under it).
    turn: TurnKey,
}

/// Stages 1–4. `Ok(None)`: nothing the shim can read; run unchanged.
fn prepare(
    ctx: &Ctx<'_>,
    args: &[OsString],
    prompt: &Prompt,
    new_id: String,
    adopt: &mut dyn FnMut() -> Option<String>,
) -> anyhow::Result<Option<Prepared>> {
    let Some(u) = understand::understand(prompt) else {
        return Ok(None);
    };
    if env::test_panic() {
        panic!("CLAUDE_SHIM_TEST_PANIC is set");
    }
    let place = Place::here()?;
    let caps = place.capabilities(ctx.real, ctx.guard)?;
    let text = prompt.text();
    let (u, found) = content::look(
        &place,
        &ctx.managed.args,
        &caps,
        text.as_deref(),
        u,
        Mode::Turn,
    )?;
    let turn = TurnKey::of(&found, &u.conv);
    let interrupted = match env::on_retry_continue() {
        true => interrupted(&place, &turn),
        false => None,
    };
    let facts = plan::Facts {
        caller_session: ctx.managed.caller_resume.clone(),
        forced_fresh: env::fresh(),
        candidate: found.candidate.clone(),
        caps,
        new_id,
        max_compactions: env::max_compactions(),
        interrupted,
    };
    let mut plan = plan::plan(facts.clone());
    // A new conversation's first turn takes a CLI started ready for it, if
    // there is one (not a one-shot call, nor a transcript that may be
    // refused as too long: those run cold).
    if let Plan::Fresh { session, why } = &mut plan {
        let adoptable = !matches!(
            why,
            Why::Compacted(_) | Why::Missed(plan::Miss::NotRecognised(_))
        );
        if let Some(ready) = adoptable.then(&mut *adopt).flatten() {
            *session = ready;
        }
    }
    debug!("plan: {plan:?}");
    let mut reason = Reason::of(&plan, found.busy);
    if matches!(plan, Plan::Resume { .. }) {
        reason.text = format!("{} ({})", reason.text, u.conv.rule());
    }
    let send_preamble = env::preamble_keep() || found.preamble_changed;
    let input = ctx.managed.input;
    let mut attempt = attempt::attempt(&plan, &u.conv, send_preamble, prompt, args, input);
    let compacted = matches!(
        plan,
        Plan::Fresh {
            why: Why::Compacted(_),
            ..
        }
    );
    let resume_instead = compacted.then(|| {
        // Held past the point where the CLI could refuse it as too long.
        attempt.hold = true;
        attempt.proof = runner::Proof::Answer;
        let plan = plan::plan(plan::Facts {
            max_compactions: None,
            ..facts
        });
        let attempt = attempt::attempt(&plan, &u.conv, send_preamble, prompt, args, input);
        let head = found.candidate.as_ref().ok().and_then(|c| c.at.clone());
        (plan, attempt, head)
    });
    let ownership = match ctx.managed.ephemeral {
        true => Ownership::Ephemeral,
        false => Ownership::Kept,
    };
    let config_dir = place.config_dir.to_string_lossy().into_owned();
    let head_before = match (&plan, &found.candidate) {
        (
            Plan::Resume {
                how: How::InPlace, ..
            }
            | Plan::Caller { .. },
            Ok(c),
        ) => c.at.clone(),
        _ => None,
    };
    let pin_ctx = PinContext::new(
        found.scope.clone(),
        found.parts.clone(),
        found.base.clone(),
        &u.conv,
        &place.cwd,
        &config_dir,
        ownership,
    )
    .keeping(&u.conv, text.as_deref());
    // Holding a lease we will not use would block others.
    let in_place = |p: &Plan| {
        matches!(
            p,
            Plan::Resume {
                how: How::InPlace,
                ..
            }
        )
    };
    let lease = match in_place(&plan) || resume_instead.as_ref().is_some_and(|r| in_place(&r.0)) {
        true => found.lease,
        false => None,
    };
    Ok(Some(Prepared {
        place,
        plan,
        reason,
        attempt,
        ctx: pin_ctx,
        lease,
        head_before,
        resume_instead,
        turn,
    }))
}

/// Which turn of which conversation this is (retries of it share it).
#[derive(Debug, Clone)]
struct TurnKey {
    node: crate::identity::Node,
    message: String,
}

impl TurnKey {
    fn of(found: &lookup::Found, conv: &crate::dialect::Conversation) -> TurnKey {
        TurnKey {
            node: found.base.user(&conv.current).node(&found.scope),
            message: crate::identity::ReplyHash::of(&conv.current).to_string(),
        }
    }
}

/// The attempt a run is recorded as: started before it runs, ended after,
/// with or without a result (a killed shim never ends it: its pid tells).
struct Attempts(Option<i64>);

impl Attempts {
    fn start(place: &Place, turn: &TurnKey, session: &str, continues: u32) -> Attempts {
        let store = place.store.lock();
        // Only a retry within its window reads them (a day at least: callers
        // may set different windows).
        let keep = env::retry_window().max(std::time::Duration::from_secs(86_400));
        if store.housekeeping_due("attempts") {
            if let Err(e) = store.prune_attempts(store.now() - keep.as_secs() as i64) {
                error!("dropping old attempts: {e:#}");
            }
        }
        let id = store.start_attempt(
            &turn.node,
            &turn.message,
            session,
            std::process::id() as i32,
            continues as i64,
        );
        Attempts(id.map_err(|e| error!("recording the attempt: {e:#}")).ok())
    }

    /// `None`: it ended without a result that counts (refused, killed).
    fn end(&self, place: &Place, finished: Option<&Finished>) {
        use crate::store::attempts::Outcome;
        let Some(id) = self.0 else { return };
        let got_result = finished.is_some_and(|f| {
            f.observation.result.is_some() || (f.observation.text.is_some() && f.exit.success())
        });
        let outcome = if got_result {
            Outcome::Result
        } else {
            Outcome::NoResult
        };
        if let Err(e) = place.store.lock().end_attempt(id, outcome) {
            error!("recording the attempt's end: {e:#}");
        }
    }
}

/// The same turn's last attempt within the retry window, if it ended
/// without a result (killed, timed out) and left its session's file.
fn interrupted(place: &Place, turn: &TurnKey) -> Option<plan::Interrupted> {
    let store = place.store.lock();
    let since = store.now() - env::retry_window().as_secs() as i64;
    let last = store
        .last_attempt(&turn.node, &turn.message, since)
        .ok()??;
    let ended_without = match last.outcome {
        Some(crate::store::attempts::Outcome::NoResult) => true,
        Some(crate::store::attempts::Outcome::Result) => false,
        // Never said: its shim was killed, unless it still runs.
        None => !crate::platform::alive(last.pid),
    };
    let left_its_file = sessions::find(&place.config_dir, &last.session).is_some();
    (ended_without && left_its_file).then_some(plan::Interrupted {
        session: last.session,
        continues: last.continues as u32,
    })
}

/// Stages 5 and 6, with one fallback: a resume the CLI refuses before any
/// output reached the caller reruns fresh, as the caller asked.
fn execute(
    ctx: &Ctx<'_>,
    p: Prepared,
    prompt: &Prompt,
    args: &[OsString],
    launch: &mut dyn Launch,
) -> Exit {
    let Prepared {
        place,
        mut plan,
        mut reason,
        attempt,
        ctx: pin_ctx,
        lease,
        head_before,
        resume_instead,
        turn,
    } = p;
    let continues = match plan {
        Plan::Continue { continues, .. } => continues,
        _ => 0,
    };
    let mut attempt_row = Attempts::start(&place, &turn, plan.target_session(), continues);
    let before = Before::read(&place, &plan);
    let head = head_before.clone();
    let recorder = Arc::new(
        Recorder::new(
            place.store.clone(),
            plan.clone(),
            pin_ctx.clone(),
            place.config_dir.clone(),
            head_before,
            lease,
        )
        .with_attempt(attempt_row.0),
    );
    let first = launch.planned(
        ctx,
        &plan,
        head.as_deref(),
        &attempt,
        Some(recorder.clone()),
    );
    let resuming = matches!(plan, Plan::Resume { .. });
    let refused = !first.released() && may_be_refusal(&first, &ctx.child);
    debug!(
        "run ended {:?}: released {}, refused {refused}, too long {}",
        first.exit,
        first.released(),
        first.observation.too_long()
    );
    let (finished, kind, sent, recorder, before) = match resume_instead {
        Some((again, again_attempt, again_head)) if refused && first.observation.too_long() => {
            // The full transcript does not fit: the compacted session is
            // the conversation's best holder after all.
            first.discard();
            launch.between(ctx);
            recorder.at_exit(&first.observation, false);
            let lease = recorder.take_lease();
            drop(recorder);
            debug!("the full transcript was refused as too long; resuming {again:?}");
            attempt_row.end(&place, None);
            attempt_row = Attempts::start(&place, &turn, again.target_session(), 0);
            plan = again;
            reason = Reason::compacted_too_long();
            let before = Before::read(&place, &plan);
            let recorder = Arc::new(
                Recorder::new(
                    place.store.clone(),
                    plan.clone(),
                    pin_ctx,
                    place.config_dir.clone(),
                    again_head.clone(),
                    lease,
                )
                .with_attempt(attempt_row.0),
            );
            let watch: Arc<dyn Watch> = recorder.clone();
            let f = launch.planned(
                ctx,
                &plan,
                again_head.as_deref(),
                &again_attempt,
                Some(watch),
            );
            f.release();
            (f, kind_of(&plan), again_attempt.sent, recorder, before)
        }
        _ if resuming && refused => {
            // Refused before the caller saw anything: forget it, run fresh once.
            first.discard();
            launch.between(ctx);
            debug!("resume refused ({:?}); rerunning fresh", first.exit);
            recorder.at_exit(&first.observation, false);
            drop(recorder);
            if let Plan::Resume { session, .. } = &plan {
                if let Err(e) = place.store.lock().drop_session(session) {
                    error!("dropping refused session {session}: {e:#}");
                }
            }
            plan = Plan::Fresh {
                session: launch.fresh_id(),
                why: Why::Refused,
            };
            attempt_row.end(&place, None);
            attempt_row = Attempts::start(&place, &turn, plan.target_session(), 0);
            reason = Reason::of(&plan, false);
            let fresh = Attempt {
                args: attempt::argv(&plan, args),
                ..attempt::original(prompt, args, ctx.managed.input)
            };
            let recorder = Arc::new(
                Recorder::new(
                    place.store.clone(),
                    plan.clone(),
                    pin_ctx,
                    place.config_dir.clone(),
                    None,
                    None,
                )
                .with_attempt(attempt_row.0),
            );
            let f = launch.as_asked(ctx, &fresh, Some(recorder.clone()));
            (f, Kind::Fallback, prompt.len(), recorder, Before::fresh())
        }
        _ => {
            first.release();
            (first, kind_of(&plan), attempt.sent, recorder, before)
        }
    };
    let succeeded = succeeded(&finished);
    attempt_row.end(&place, Some(&finished));
    recorder.at_exit(&finished.observation, succeeded);
    let spent = before.spent(&place, &plan, &finished);
    place
        .store
        .lock()
        .log_run(&Run {
            cwd: &place.cwd,
            kind,
            why_code: reason.code,
            why: &reason.text,
            exit: finished.exit.as_i32(),
            bytes_in: prompt.len(),
            bytes_sent: sent,
            spent,
            session: Some(plan.target_session()),
            conv_key: recorder.conv_key(),
            engine: launch.engine(),
        })
        .unwrap_or_else(|e| error!("recording the run failed: {e:#}"));
    // A fleet: what the run added to its session travels, before the lease goes.
    if succeeded || matches!(kind, Kind::Resumed) {
        crate::fleet::after_run(
            &place.store.lock(),
            &place.config_dir,
            plan.target_session(),
        );
    }
    recorder.finish();
    sweep_ephemeral(&place);
    place.store.lock().flush();
    debug!("turn: done");
    finished.exit
}

/// What the session looked like before the run, to tell what the run added.
struct Before {
    /// The running cost the CLI starts from (`None`: unknown).
    base_cost: Option<f64>,
    /// Where the turn's records start in the target session's file, and
    /// the message ids a fork copies from its parent.
    offset: u64,
    copied: std::collections::HashSet<String>,
}

impl Before {
    fn fresh() -> Before {
        Before {
            base_cost: Some(0.0),
            offset: 0,
            copied: Default::default(),
        }
    }

    fn read(place: &Place, plan: &Plan) -> Before {
        let resumed = match plan {
            Plan::Resume { session, .. }
            | Plan::Caller { session }
            | Plan::Continue { session, .. } => session,
            Plan::Fresh { .. } => return Before::fresh(),
            Plan::AsIs { .. } => {
                return Before {
                    base_cost: None,
                    offset: 0,
                    copied: Default::default(),
                }
            }
        };
        let file = sessions::find(&place.config_dir, resumed);
        let base_cost = file.as_deref().and_then(sessions::saved_total_cost);
        let in_place = plan.target_session() == resumed.as_str();
        Before {
            base_cost,
            offset: match (&file, in_place) {
                (Some(f), true) => std::fs::metadata(f).map(|m| m.len()).unwrap_or(0),
                _ => 0,
            },
            // Only text output needs them (the others print usage).
            copied: Default::default(),
        }
    }

    /// What the run spent. Output with a result says so itself; text
    /// output is read back from the session file the run appended to.
    fn spent(&self, place: &Place, plan: &Plan, f: &Finished) -> Spent {
        if f.observation.result.is_some() {
            return record::spent(&f.observation, self.base_cost, None, None);
        }
        let file = sessions::find(&place.config_dir, plan.target_session());
        let Some(file) = file else {
            return record::spent(&f.observation, self.base_cost, None, None);
        };
        let copied = match plan {
            Plan::Resume {
                session,
                how: How::ForkAt { .. } | How::ForkHead { .. },
            } => sessions::find(&place.config_dir, session)
                .map(|p| sessions::message_ids(&p))
                .unwrap_or_default(),
            _ => self.copied.clone(),
        };
        let usage = sessions::turn_usage(&file, self.offset, &copied);
        let saved = sessions::saved_total_cost(&file).filter(|_| f.exit.success());
        record::spent(&f.observation, self.base_cost, usage, saved)
    }
}

fn kind_of(plan: &Plan) -> Kind {
    match plan {
        Plan::Fresh { .. } => Kind::Fresh,
        Plan::Resume {
            how: How::InPlace, ..
        }
        | Plan::Caller { .. }
        | Plan::Continue { .. } => Kind::Resumed,
        Plan::Resume { .. } => Kind::Forked,
        Plan::AsIs { .. } => Kind::Unchanged,
    }
}

/// A run that may be pinned: exit 0 and no error result.
fn succeeded(f: &Finished) -> bool {
    f.exit.success() && !f.observation.is_error_result()
}

/// A failed resume attempt the CLI may have refused: it ended by itself with
/// an error. A death by signal, or any end after the caller signalled it, is
/// a stop the caller (or the system) asked for; rerunning would undo it.
fn may_be_refusal(f: &Finished, child: &ChildPid) -> bool {
    !succeeded(f) && matches!(f.exit, runner::Exit::Code(_)) && !child.signalled()
}

/// Run exactly as the caller asked; the runs log still says so, and why.
pub fn unchanged(
    ctx: &Ctx<'_>,
    original: &Attempt,
    prompt: &Prompt,
    reason: Reason,
    launch: &mut dyn Launch,
) -> Exit {
    let f = launch.as_asked(ctx, original, None);
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run = Run {
        cwd: &cwd,
        kind: Kind::Unchanged,
        why_code: reason.code,
        why: &reason.text,
        exit: f.exit.as_i32(),
        bytes_in: prompt.len(),
        bytes_sent: prompt.len(),
        spent: record::spent(&f.observation, None, None, None),
        session: f.observation.init_session.as_deref(),
        conv_key: None,
        engine: launch.engine(),
    };
    // Store trouble is why some of these ran unchanged: never fail on it.
    if reason.code != "store-unavailable" {
        let logged = Store::open_default(crate::warm::client::store_connection).and_then(|s| {
            s.log_run(&run)?;
            s.flush();
            Ok(())
        });
        match logged {
            Ok(()) => {}
            Err(e) => error!("recording the run failed: {e:#}"),
        }
    }
    f.exit
}

/// Delete the files of ephemeral sessions that are superseded or idle past
/// their TTL (a few per turn, once a minute on a shared store; `gc` sweeps the rest).
pub fn sweep_ephemeral(place: &Place) {
    let store = place.store.lock();
    if !store.housekeeping_due("ephemeral") {
        return;
    }
    let idle_before = store.now() - env::ephemeral_ttl().as_secs() as i64;
    let expired = match store.expired_ephemeral(idle_before, crate::platform::alive) {
        Ok(e) => e,
        Err(e) => {
            error!("looking for expired ephemeral sessions: {e:#}");
            return;
        }
    };
    for (session, config_dir) in expired.into_iter().take(8) {
        let dir = if config_dir.is_empty() {
            place.config_dir.clone()
        } else {
            config_dir.into()
        };
        sessions::remove(&dir, &session);
        if let Err(e) = store.drop_session(&session) {
            error!("forgetting ephemeral session {session}: {e:#}");
        }
        debug!("ephemeral session {session} removed");
    }
}
