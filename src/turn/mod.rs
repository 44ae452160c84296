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
mod execute;
pub mod handshake;
pub mod initialize;
mod launch;
pub mod lookup;
pub mod plan;
pub mod record;
mod relay;
pub mod understand;
pub mod warm;
pub mod why;

use execute::{execute, interrupted, TurnKey};
pub use launch::{Cold, Ctx, Launch};

use crate::invocation::Managed;
use crate::prompt::{self, Prompt};
use crate::runner::{self, signals::ChildPid, Exit, Finished, Watch};
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
