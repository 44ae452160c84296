//! A turn whose prompt has been read: decided (stages 1–4, [`prepare`]),
//! then executed, or run exactly as the caller asked ([`unchanged`]) when
//! the shim cannot help.

use super::attempt::{self, Attempt};
use super::content;
use super::execute::{execute, interrupted, Prepared, TurnKey};
use super::launch::{Ctx, Launch};
use super::lookup::{Mode, Place};
use super::plan::{self, How, Plan, Why};
use super::record::{self, PinContext};
use super::understand;
use super::why::Reason;
use crate::prompt::{self, Prompt};
use crate::runner::{self, Exit};
use crate::store::pins::Ownership;
use crate::store::runs::{Kind, Run};
use crate::store::Store;
use crate::{debug, env, error};
use std::panic::AssertUnwindSafe;

/// Decide and run a turn whose prompt has been read. `original` is the
/// caller's invocation exactly as it came (what runs when the shim cannot
/// help).
pub fn managed_turn(
    ctx: &Ctx<'_>,
    prompt: &Prompt,
    original: &Attempt,
    launch: &mut dyn Launch,
) -> Exit {
    let new_id = launch.fresh_id();
    let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        prepare(ctx, prompt, new_id, &mut || launch.adopt())
    }));
    match prepared {
        Ok(Ok(Some(p))) => execute(ctx, p, prompt, launch),
        Ok(Ok(None)) => {
            let reason = match prompt {
                Prompt::None { inherit: false, .. } if !prompt.is_empty() => {
                    Reason::no_user_message(prompt::CONTROL_PATIENCE.as_millis() as u64)
                }
                Prompt::Late => Reason::late_stdin(prompt::STDIN_PATIENCE.as_millis() as u64),
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

/// Stages 1–4. `Ok(None)`: nothing the shim can read; run unchanged.
fn prepare(
    ctx: &Ctx<'_>,
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
    // What the turn waits for its store: the opening, and the lookup.
    let waited = std::time::Instant::now();
    let (place, caps) = ctx.opening.take(ctx.real, ctx.guard)?;
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
    let send_preamble = env::preamble_keep() || found.preamble_changed;
    let delta = attempt::delta(&u.conv, send_preamble);
    let (candidate, interrupted) = match subcommand_word(ctx, prompt, delta) {
        Some(miss) => (Err(miss), None),
        None => (
            found.candidate.clone(),
            env::on_retry_continue()
                .then(|| interrupted(&place, &turn))
                .flatten(),
        ),
    };
    crate::timeline::waited_for_store(waited.elapsed());
    // Before 2.1 each new process computed its start-up snapshot anew.
    let snapshot_moves = crate::probe::release(&caps.version).is_some_and(|v| v < (2, 1, 0));
    let facts = plan::Facts {
        caller_session: ctx.managed.caller_resume.clone(),
        forced_fresh: env::fresh(),
        candidate,
        caps,
        new_id,
        max_compactions: env::max_compactions(),
        interrupted,
    };
    let mut plan = plan::plan(facts.clone());
    adopt_ready(&mut plan, adopt);
    debug!("plan: {plan:?}");
    let mut reason = Reason::of(&plan, found.busy);
    if matches!(plan, Plan::Resume { .. }) {
        reason.text = format!("{} ({})", reason.text, u.conv.rule());
    }
    let input = ctx.managed.input;
    let mut attempt = attempt::attempt(&plan, &u.conv, send_preamble, prompt, ctx.args, input);
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
        let attempt = attempt::attempt(&plan, &u.conv, send_preamble, prompt, ctx.args, input);
        let head = found.candidate.as_ref().ok().and_then(|c| c.at.clone());
        (plan, attempt, head)
    });
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
    let pin_ctx = pin_context(ctx, &place, &found, &u.conv, text.as_deref());
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
        snapshot_moves,
    }))
}

/// A new conversation's first turn takes a CLI started ready for it, if
/// there is one (not a one-shot call, nor a transcript that may be refused
/// as too long: those run cold).
fn adopt_ready(plan: &mut Plan, adopt: &mut dyn FnMut() -> Option<String>) {
    if let Plan::Fresh { session, why } = plan {
        let adoptable = !matches!(
            why,
            Why::Compacted(_)
                | Why::Missed(plan::PinMiss::NotRecognised(_) | plan::PinMiss::SubcommandWord(_))
        );
        if let Some(ready) = adoptable.then(adopt).flatten() {
            *session = ready;
        }
    }
}

/// A resumed turn's new message that would run a subcommand
/// ([`plan::runs_a_subcommand`]): no pin may be used for it.
fn subcommand_word(ctx: &Ctx<'_>, prompt: &Prompt, delta: &str) -> Option<plan::PinMiss> {
    let positional = matches!(prompt, Prompt::Positional { .. });
    plan::runs_a_subcommand(ctx.managed.mode, positional, delta)
}

/// What the turn's pin will say of the conversation, and whether its
/// replayed history misses what the kept prompt began with.
fn pin_context(
    ctx: &Ctx<'_>,
    place: &Place,
    found: &super::lookup::Found,
    conv: &crate::dialect::Conversation,
    text: Option<&str>,
) -> PinContext {
    let ownership = match ctx.managed.ephemeral {
        true => Ownership::Ephemeral,
        false => Ownership::Kept,
    };
    let config_dir = place.config_dir.to_string_lossy().into_owned();
    let pin_ctx = PinContext::new(
        found.scope.clone(),
        found.parts.clone(),
        found.base.clone(),
        conv,
        &place.cwd,
        &config_dir,
        ownership,
    )
    .keeping(conv, text);
    PinContext {
        replay_misses_prefix: replay_misses_prefix(place, conv, &found.node, text),
        ..pin_ctx
    }
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
        replay_misses_prefix: false,
        cache_miss: None,
        prefix: None,
        timing: Some(crate::timeline::now()),
        errors: crate::log::errors_logged(),
        cold: None,
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
/// Made without the shim, would this turn's call have sent another system
/// prompt than the caller's call before it (`cost::system_differs`), and so
/// written the CLI's cached prefix anew? A first turn is sent as it is. The
/// call before is known where its prompt was kept: the conversation's first
/// turn (every first turn's pin keeps it) or a turn continued by content.
/// Any other call before replayed the same conversation from its start, as
/// this one does, so began alike. Unknown counts as the same (the estimate
/// then errs low, as without this).
fn replay_misses_prefix(
    place: &Place,
    conv: &crate::dialect::Conversation,
    node: &crate::identity::Node,
    now: Option<&str>,
) -> bool {
    let header = crate::env::attribution_header();
    if !conv.has_history() || !crate::cost::sends_billing_header(header.as_deref()) {
        return false;
    }
    let Some(now) = now else {
        return false;
    };
    let pin = match &conv.continued {
        Some(c) => Some(c.pin),
        None if conv.prior_user_turns().count() == 1 => None,
        None => return false,
    };
    let before = place.store.lock().kept_prompt_head(pin, node);
    match before {
        Ok(Some(before)) => crate::cost::system_differs(&before, now, true),
        Ok(None) => false,
        Err(e) => {
            debug!("reading the kept prompt's start: {e:#}");
            false
        }
    }
}
