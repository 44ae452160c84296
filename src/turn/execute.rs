//! Stages 5 and 6: the attempt loop. Each attempt runs, is recorded, and a
//! resume the CLI refuses before any output reached the caller reruns fresh,
//! as the caller asked; a retry of a killed turn may continue it.

use super::attempt::{self, Attempt};
use super::launch::{Ctx, Launch};
use super::lookup::{self, Place};
use super::plan::{self, How, Plan, Why};
use super::record::{self, PinContext, Recorder, RunDraft};
use super::why::Reason;
use crate::prompt::Prompt;
use crate::runner::{self, signals::ChildPid, Exit, Finished, Watch};
use crate::store::runs::{Kind, Run, Spent};
use crate::{debug, env, error, sessions};
use std::ffi::OsString;
use std::sync::Arc;

/// A turn decided: everything `execute` needs.
pub(super) struct Prepared {
    pub(super) place: Place,
    pub(super) plan: Plan,
    pub(super) reason: Reason,
    pub(super) attempt: Attempt,
    pub(super) ctx: PinContext,
    /// The in-place lease, taken by lookup.
    pub(super) lease: Option<lookup::LeaseGuard>,
    pub(super) head_before: Option<String>,
    /// A fresh turn past the compaction ceiling may be refused as too long:
    /// then this resume of the compacted session runs, and its head.
    pub(super) resume_instead: Option<(Plan, Attempt, Option<String>)>,
    /// Which turn this is (its attempts are recorded under it).
    pub(super) turn: TurnKey,
}

/// Which turn of which conversation this is (retries of it share it).
#[derive(Debug, Clone)]
pub(super) struct TurnKey {
    node: crate::identity::Node,
    message: String,
}

impl TurnKey {
    pub(super) fn of(found: &lookup::Found, conv: &crate::dialect::Conversation) -> TurnKey {
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
pub(super) fn interrupted(place: &Place, turn: &TurnKey) -> Option<plan::Interrupted> {
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
pub(super) fn execute(
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
    // The engine a warm launcher uses is known once it runs: the exit says.
    let engine = launch.engine();
    let draft = |kind: Kind, reason: &Reason, sent: usize, before: &Before| RunDraft {
        cwd: place.cwd.clone(),
        kind,
        why_code: reason.code,
        why: reason.text.clone(),
        bytes_in: prompt.len(),
        bytes_sent: sent,
        engine,
        base_cost: before.base_cost,
    };
    let recorder = Arc::new(
        Recorder::new(
            place.store.clone(),
            plan.clone(),
            pin_ctx.clone(),
            place.config_dir.clone(),
            head_before,
            lease,
        )
        .with_attempt(attempt_row.0)
        .with_run(draft(kind_of(&plan), &reason, attempt.sent, &before)),
    );
    ctx.arm_live(prompt);
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
                .with_attempt(attempt_row.0)
                .with_run(draft(
                    kind_of(&plan),
                    &reason,
                    again_attempt.sent,
                    &before,
                )),
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
                .with_attempt(attempt_row.0)
                .with_run(draft(
                    Kind::Fallback,
                    &reason,
                    prompt.len(),
                    &Before::fresh(),
                )),
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
    let why = ctx.why_with_live(&reason.text);
    let run = Run {
        cwd: &place.cwd,
        kind,
        why_code: reason.code,
        why: &why,
        exit: finished.exit.as_i32(),
        bytes_in: prompt.len(),
        bytes_sent: sent,
        spent,
        session: Some(plan.target_session()),
        conv_key: recorder.conv_key(),
        engine: launch.engine(),
        replay_misses_prefix: recorder.replay_misses_prefix(),
    };
    // Written ahead when the caller was about to have the reply: completed.
    let logged = match recorder.run_row() {
        Some(id) => place.store.lock().end_run(id, &run),
        None => place.store.lock().log_run(&run),
    };
    logged.unwrap_or_else(|e| error!("recording the run failed: {e:#}"));
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

/// Delete the files of ephemeral sessions that are superseded or idle past
/// their TTL (a few per turn, once a minute on a shared store; `gc` sweeps the rest).
pub fn sweep_ephemeral(place: &Place) {
    let store = place.store.lock();
    if !store.housekeeping_due("ephemeral") {
        return;
    }
    let idle_before = store.now() - env::ephemeral_ttl().as_secs() as i64;
    let expired = match store.expired_ephemeral(idle_before, &crate::platform::alive) {
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
