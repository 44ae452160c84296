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
use crate::runner::{self, Exit, Finished, Watch};
use crate::store::runs::{Engine, Kind, Run, Spent};
use crate::{debug, env, error, sessions};
use std::path::Path;
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
    /// The CLI computes its start-up snapshot anew in each process (before
    /// 2.1; later releases keep it with the session): worth a fingerprint.
    pub(super) snapshot_moves: bool,
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

/// What the attempt loop does after the first run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The run stands: its output goes to the caller.
    Keep,
    /// The full transcript was refused as too long: the compacted session
    /// that holds the conversation is resumed after all.
    ResumeCompacted,
    /// The resume was refused: the turn runs fresh, as the caller asked.
    RerunFresh,
}

/// The decision after the first run. Only a refusal reruns: the run failed
/// by itself before any of its output reached the caller (see
/// [`may_be_refusal`]). `signalled`: the caller signalled it.
/// `compacted`: there is a compacted session to resume instead.
fn next(first: &Finished, plan: &Plan, signalled: bool, compacted: bool) -> Next {
    let refused = !first.released() && may_be_refusal(first, signalled);
    match plan {
        _ if compacted && refused && first.observation.too_long() => Next::ResumeCompacted,
        Plan::Resume { .. } if refused => Next::RerunFresh,
        _ => Next::Keep,
    }
}

/// What a turn's runs share: where it runs, which turn it is, what the
/// caller sent and asked.
struct Turn<'t> {
    ctx: &'t Ctx<'t>,
    place: &'t Place,
    key: &'t TurnKey,
    prompt: &'t Prompt,
    /// The engine a warm launcher uses is known once it runs: the exit says.
    engine: Engine,
    /// What moves the cached prefix, as the turn's CLI starts.
    prefix: crate::cache_miss::Prefix,
}

/// A run about to start: what it runs and why, and its records (its
/// attempt, its recorder, the session as it was).
struct Begun {
    plan: Plan,
    reason: Reason,
    kind: Kind,
    sent: usize,
    recorder: Arc<Recorder>,
    before: Before,
    attempt_row: Attempts,
}

impl Begun {
    fn ended(self, finished: Finished) -> Ran {
        Ran {
            finished,
            run: self,
        }
    }
}

/// A run that ended, as it will be recorded.
struct Ran {
    finished: Finished,
    run: Begun,
}

/// Stages 5 and 6, with one fallback: a resume the CLI refuses before any
/// output reached the caller reruns fresh, as the caller asked.
pub(super) fn execute(
    ctx: &Ctx<'_>,
    p: Prepared,
    prompt: &Prompt,
    launch: &mut dyn Launch,
) -> Exit {
    let Prepared {
        place,
        plan,
        reason,
        attempt,
        ctx: pin_ctx,
        lease,
        head_before,
        resume_instead,
        turn: key,
        snapshot_moves,
    } = p;
    let t = Turn {
        ctx,
        place: &place,
        key: &key,
        prompt,
        engine: launch.engine(),
        prefix: super::cache::prefix(
            ctx.args,
            env::cli_model().as_deref(),
            snapshot_moves.then_some((ctx.real, place.config_dir.as_path(), place.cwd.as_str())),
        ),
    };
    let kind = kind_of(&plan);
    let head = head_before.clone();
    let run = t.begin(
        plan,
        reason,
        kind,
        attempt.sent,
        pin_ctx.clone(),
        (head_before, lease),
    );
    ctx.arm_live(prompt);
    let first = launch.planned(
        ctx,
        &run.plan,
        head.as_deref(),
        &attempt,
        Some(run.recorder.clone()),
    );
    let next = next(
        &first,
        &run.plan,
        ctx.child.signalled(),
        resume_instead.is_some(),
    );
    debug!(
        "run ended {:?}: released {}, next {next:?}, too long {}",
        first.exit,
        first.released(),
        first.observation.too_long()
    );
    let first = run.ended(first);
    let ran = match (next, resume_instead) {
        (Next::ResumeCompacted, Some(instead)) => {
            t.resume_compacted(launch, first, instead, pin_ctx)
        }
        (Next::RerunFresh, _) => t.rerun_fresh(launch, first, pin_ctx),
        _ => {
            first.finished.release();
            first
        }
    };
    t.record(ran, launch.engine())
}

impl Turn<'_> {
    /// The runs log's row of a run, before it ends.
    fn draft(&self, kind: Kind, reason: &Reason, sent: usize, before: &Before) -> RunDraft {
        RunDraft {
            cwd: self.place.cwd.clone(),
            kind,
            why_code: reason.code,
            why: reason.text.clone(),
            bytes_in: self.prompt.len(),
            bytes_sent: sent,
            engine: self.engine,
            base_cost: before.base_cost,
        }
    }

    /// A run of `plan` begins: its attempt is recorded, the session read
    /// as it is, and its recorder made (`at`: the session's head it starts
    /// from, and the lease it holds).
    fn begin(
        &self,
        plan: Plan,
        reason: Reason,
        kind: Kind,
        sent: usize,
        pin_ctx: PinContext,
        at: (Option<String>, Option<lookup::LeaseGuard>),
    ) -> Begun {
        let continues = match plan {
            Plan::Continue { continues, .. } => continues,
            _ => 0,
        };
        let attempt_row = Attempts::start(self.place, self.key, plan.target_session(), continues);
        let before = Before::read(self.place, &plan);
        let recorder = Recorder::new(
            self.place.store.clone(),
            plan.clone(),
            pin_ctx,
            self.place.config_dir.clone(),
            at.0,
            at.1,
        )
        .with_attempt(attempt_row.0)
        .with_run(self.draft(kind, &reason, sent, &before));
        Begun {
            plan,
            reason,
            kind,
            sent,
            recorder: Arc::new(recorder),
            before,
            attempt_row,
        }
    }

    /// The first run is forgotten: nothing of it reached the caller.
    fn forget(&self, launch: &mut dyn Launch, first: &Ran) -> Option<lookup::LeaseGuard> {
        first.finished.discard();
        launch.between(self.ctx);
        first
            .run
            .recorder
            .at_exit(&first.finished.observation, false);
        first.run.attempt_row.end(self.place, None);
        first.run.recorder.take_lease()
    }

    /// The full transcript does not fit: the compacted session is the
    /// conversation's best holder after all.
    fn resume_compacted(
        &self,
        launch: &mut dyn Launch,
        first: Ran,
        (plan, attempt, head): (Plan, Attempt, Option<String>),
        pin_ctx: PinContext,
    ) -> Ran {
        let lease = self.forget(launch, &first);
        drop(first);
        debug!("the full transcript was refused as too long; resuming {plan:?}");
        let kind = kind_of(&plan);
        let reason = Reason::compacted_too_long();
        let at = (head.clone(), lease);
        let run = self.begin(plan, reason, kind, attempt.sent, pin_ctx, at);
        let watch: Arc<dyn Watch> = run.recorder.clone();
        let f = launch.planned(self.ctx, &run.plan, head.as_deref(), &attempt, Some(watch));
        f.release();
        run.ended(f)
    }

    /// Refused before the caller saw anything: the session is forgotten
    /// and the turn runs fresh once, as the caller asked.
    fn rerun_fresh(&self, launch: &mut dyn Launch, first: Ran, pin_ctx: PinContext) -> Ran {
        // The lease goes with the refused session.
        drop(self.forget(launch, &first));
        debug!(
            "resume refused ({:?}); rerunning fresh",
            first.finished.exit
        );
        if let Plan::Resume { session, .. } = &first.run.plan {
            if let Err(e) = self.place.store.lock().drop_session(session) {
                error!("dropping refused session {session}: {e:#}");
            }
        }
        drop(first);
        let plan = Plan::Fresh {
            session: launch.fresh_id(),
            why: Why::Refused,
        };
        let reason = Reason::of(&plan, false);
        let fresh = Attempt {
            args: attempt::argv(&plan, self.ctx.args),
            ..attempt::original(self.prompt, self.ctx.args, self.ctx.managed.input)
        };
        let sent = self.prompt.len();
        // A fresh plan's session is new: `Before::read` finds it empty.
        let run = self.begin(plan, reason, Kind::Fallback, sent, pin_ctx, (None, None));
        let f = launch.as_asked(self.ctx, &fresh, Some(run.recorder.clone()));
        run.ended(f)
    }

    /// The turn's records: its attempt's end, its pin (the recorder's), its
    /// row in the runs log, its transcript on a fleet; then the lease goes.
    fn record(&self, ended: Ran, engine: Engine) -> Exit {
        let (place, finished, ran) = (self.place, &ended.finished, &ended.run);
        let succeeded = succeeded(finished);
        ran.attempt_row.end(place, Some(finished));
        ran.recorder.at_exit(&finished.observation, succeeded);
        // The run's session file, looked for once: what it spent (text
        // output), what it sent, whether it compacted.
        let file = sessions::find(&place.config_dir, ran.plan.target_session());
        let spent = ran
            .before
            .spent(file.as_deref(), place, &ran.plan, finished);
        let why = self.ctx.why_with_live(&ran.reason.text);
        let timing = crate::timeline::now();
        let prefix = super::cache::as_sent(&self.prefix, file.as_deref());
        // A fork's parent holds its previous turn's records (in place, the
        // file is the same).
        let resumed = super::cache::source(&ran.plan)
            .filter(|s| *s != ran.plan.target_session())
            .and_then(|s| sessions::find(&place.config_dir, s));
        let files: Vec<&Path> = file.iter().chain(&resumed).map(|p| p.as_path()).collect();
        let cache_miss = super::cache::miss(
            &place.store.lock(),
            &super::cache::Run {
                plan: &ran.plan,
                kind: ran.kind,
                engine,
                spent: &spent,
                prefix: &prefix,
                row: ran.recorder.run_row(),
                timing: &timing,
                compacted: &|| ran.before.compacted(file.as_deref(), finished),
                files: &files,
            },
        );
        let run = Run {
            cwd: &place.cwd,
            kind: ran.kind,
            why_code: ran.reason.code,
            why: &why,
            exit: finished.exit.as_i32(),
            bytes_in: self.prompt.len(),
            bytes_sent: ran.sent,
            spent,
            session: Some(ran.plan.target_session()),
            conv_key: ran.recorder.conv_key(),
            engine,
            replay_misses_prefix: ran.recorder.replay_misses_prefix(),
            cache_miss,
            prefix: Some(&prefix),
            timing: Some(timing),
            errors: crate::log::errors_logged(),
            cold: self.ctx.cold.get().map(|r| r.code),
        };
        // Written ahead when the caller was about to have the reply: completed.
        let logged = match ran.recorder.run_row() {
            Some(id) => place.store.lock().end_run(id, &run),
            None => place.store.lock().log_run(&run),
        };
        logged.unwrap_or_else(|e| error!("recording the run failed: {e:#}"));
        // A fleet: what the run added to its session travels, before the lease goes.
        if succeeded || matches!(ran.kind, Kind::Resumed) {
            crate::fleet::after_run(
                &place.store.lock(),
                &place.config_dir,
                ran.plan.target_session(),
            );
        }
        ran.recorder.finish();
        sweep_ephemeral(place);
        place.store.lock().flush();
        debug!("turn: done");
        finished.exit
    }
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

    /// The CLI compacted the session during the run: its output said so,
    /// or (output without events) the records it appended hold a boundary.
    fn compacted(&self, file: Option<&Path>, f: &Finished) -> bool {
        if f.observation.compactions > 0 {
            return true;
        }
        self.offset > 0 && file.is_some_and(|file| sessions::compacted_since(file, self.offset))
    }

    /// What the run spent. Output with a result says so itself; text
    /// output is read back from the session file the run appended to.
    /// `file`: the target session's.
    fn spent(&self, file: Option<&Path>, place: &Place, plan: &Plan, f: &Finished) -> Spent {
        if f.observation.result.is_some() {
            return record::spent(&f.observation, self.base_cost, None, None);
        }
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
        let usage = sessions::turn_usage(file, self.offset, &copied);
        let saved = sessions::saved_total_cost(file).filter(|_| f.exit.success());
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
fn may_be_refusal(f: &Finished, signalled: bool) -> bool {
    !succeeded(f) && matches!(f.exit, runner::Exit::Code(_)) && !signalled
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Chain, ScopeParts};
    use crate::invocation::{classify, Class, Managed, Policy};
    use crate::observe::{Observation, ResultEvent};
    use crate::runner::tee;
    use crate::store::pins::{NewPin, Ownership};
    use crate::store::Store;
    use crate::turn::lookup::SharedStore;
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::path::Path;

    const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const FRESH: &str = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const COMPACTED: &str = "8e8e0435-8e12-4245-aa25-f674ed4e97a7";

    /// A run that ended with `exit` and `obs`; `reached`: its output
    /// reached the caller (else it is still held).
    fn ran(exit: Exit, obs: Observation, reached: bool) -> Finished {
        let (hold, _gate) = tee::Hold::new(true);
        if reached {
            tee::commit(&hold);
        }
        Finished::new(exit, obs, hold)
    }

    fn result(is_error: bool, text: &str) -> Observation {
        Observation {
            init_session: Some(S.into()),
            assistant_uuids: vec!["A2".into()],
            results: 1,
            result: Some(ResultEvent {
                is_error,
                text: Some(text.into()),
                session_id: Some(S.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn refused() -> Finished {
        ran(Exit::Code(1), Observation::default(), false)
    }

    fn too_long() -> Finished {
        ran(Exit::Code(1), result(true, "Prompt is too long"), false)
    }

    fn answered() -> Finished {
        ran(Exit::Code(0), result(false, "d"), true)
    }

    /// A launch that starts no CLI: each run ends as scripted; what it was
    /// asked to run is kept.
    #[derive(Default)]
    struct Fake {
        runs: VecDeque<Finished>,
        calls: Vec<(&'static str, Vec<String>)>,
        between: usize,
    }

    impl Fake {
        fn scripted(runs: impl IntoIterator<Item = Finished>) -> Fake {
            Fake {
                runs: runs.into_iter().collect(),
                ..Default::default()
            }
        }

        fn run(&mut self, how: &'static str, a: &Attempt) -> Finished {
            let args = a.args.iter().map(|s| s.to_string_lossy().into()).collect();
            self.calls.push((how, args));
            self.runs.pop_front().expect("a run the test scripted")
        }
    }

    impl Launch for Fake {
        fn fresh_id(&mut self) -> String {
            FRESH.into()
        }
        fn between(&mut self, _ctx: &Ctx<'_>) {
            self.between += 1;
        }
        fn planned(
            &mut self,
            _ctx: &Ctx<'_>,
            _plan: &Plan,
            _head: Option<&str>,
            a: &Attempt,
            _watch: Option<Arc<dyn Watch>>,
        ) -> Finished {
            self.run("planned", a)
        }
        fn as_asked(
            &mut self,
            _ctx: &Ctx<'_>,
            a: &Attempt,
            _w: Option<Arc<dyn Watch>>,
        ) -> Finished {
            self.run("as asked", a)
        }
    }

    /// A turn of `claude -p …`: its third message, the conversation pinned
    /// to session S, whose resume is planned.
    struct World {
        store: SharedStore,
        managed: Managed,
        args: Vec<OsString>,
        prompt: Prompt,
        key: TurnKey,
        pin_ctx: PinContext,
        _dir: tempfile::TempDir,
        config_dir: std::path::PathBuf,
    }

    impl World {
        fn new() -> World {
            let text = "Human: a\n\nAssistant: b\n\nHuman: c";
            let args: Vec<OsString> = ["-p", "--output-format", "json", text]
                .iter()
                .map(OsString::from)
                .collect();
            let Class::Managed(managed) = classify(&args, Policy::default()) else {
                panic!("a managed call");
            };
            let conv = crate::dialect::detect(text, None).conversation("");
            let parts = ScopeParts::default();
            let base = Chain::empty().user("a").reply("b");
            let dir = tempfile::tempdir().unwrap();
            let config_dir = dir.path().join("claude");
            let pin_ctx = PinContext::new(
                parts.scope(),
                parts.clone(),
                base.clone(),
                &conv,
                "/w",
                &config_dir.to_string_lossy(),
                Ownership::Kept,
            );
            let mut store = Store::in_memory().unwrap();
            let earlier = NewPin::of_turns(S, "A1", "/w", &["a"], "b");
            store.add_pin(&earlier, Ownership::Kept, "/c").unwrap();
            World {
                store: SharedStore::new(store),
                prompt: Prompt::Positional {
                    index: 3,
                    text: text.into(),
                },
                key: TurnKey {
                    node: base.user("c").node(&parts.scope()),
                    message: "c".into(),
                },
                managed,
                args,
                pin_ctx,
                _dir: dir,
                config_dir,
            }
        }

        fn prepared(&self, plan: Plan, instead: Option<Plan>) -> Prepared {
            let attempt = |plan: &Plan| Attempt {
                args: attempt::argv(plan, &self.args),
                ..attempt::original(&self.prompt, &self.args, self.managed.input)
            };
            Prepared {
                place: Place {
                    store: self.store.clone(),
                    config_dir: self.config_dir.clone(),
                    cwd: "/w".into(),
                },
                reason: Reason::of(&plan, false),
                attempt: attempt(&plan),
                ctx: self.pin_ctx.clone(),
                lease: None,
                head_before: Some("A1".into()),
                resume_instead: instead.map(|p| (p.clone(), attempt(&p), None)),
                turn: self.key.clone(),
                snapshot_moves: false,
                plan,
            }
        }

        /// Run the turn through `launch`.
        fn execute(&self, p: Prepared, launch: &mut Fake) -> Exit {
            let ctx = Ctx {
                cold: Default::default(),
                real: Path::new("/nonexistent/claude"),
                guard: "1:1",
                child: Default::default(),
                managed: &self.managed,
                args: &self.args,
                answered: Default::default(),
                live: Default::default(),
                opening: Default::default(),
            };
            execute(&ctx, p, &self.prompt, launch)
        }

        /// The runs log: (kind, why code, exit) of each row, newest first.
        fn rows(&self) -> Vec<(String, Option<String>, Option<i64>)> {
            let rows = self.store.lock().recent_runs(0, None, None).unwrap();
            rows.into_iter()
                .map(|r| (Kind::text(r.kind).to_owned(), r.why_code, r.exit))
                .collect()
        }
    }

    fn resume() -> Plan {
        Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        }
    }

    fn row(kind: &str, why: &str, exit: i64) -> (String, Option<String>, Option<i64>) {
        (kind.into(), Some(why.into()), Some(exit))
    }

    #[test]
    fn only_a_run_that_failed_by_itself_unseen_is_a_refusal() {
        let fresh = Plan::Fresh {
            session: FRESH.into(),
            why: Why::Forced,
        };
        let died = ran(
            Exit::Signal(nix::sys::signal::Signal::SIGTERM),
            Default::default(),
            false,
        );
        let seen = ran(Exit::Code(1), Observation::default(), true);
        let error_result = ran(Exit::Code(0), result(true, "API Error"), false);
        let cases = [
            (refused(), resume(), false, false, Next::RerunFresh),
            (refused(), resume(), true, false, Next::Keep),
            (died, resume(), false, false, Next::Keep),
            (seen, resume(), false, false, Next::Keep),
            (answered(), resume(), false, false, Next::Keep),
            (error_result, resume(), false, false, Next::RerunFresh),
            (refused(), fresh.clone(), false, false, Next::Keep),
            (
                too_long(),
                fresh.clone(),
                false,
                true,
                Next::ResumeCompacted,
            ),
            (too_long(), fresh.clone(), true, true, Next::Keep),
            (too_long(), fresh, false, false, Next::Keep),
            (too_long(), resume(), false, false, Next::RerunFresh),
        ];
        for (i, (first, plan, signalled, compacted, want)) in cases.into_iter().enumerate() {
            assert_eq!(next(&first, &plan, signalled, compacted), want, "case {i}");
        }
    }

    #[test]
    fn a_refused_resume_reruns_fresh_as_the_caller_asked_and_forgets_the_session() {
        let w = World::new();
        let mut launch = Fake::scripted([refused(), answered()]);
        let exit = w.execute(w.prepared(resume(), None), &mut launch);
        assert_eq!(exit, Exit::Code(0));
        let caller: Vec<String> = w.args.iter().map(|a| a.to_string_lossy().into()).collect();
        let fresh = [vec!["--session-id".to_string(), FRESH.into()], caller].concat();
        assert_eq!(launch.calls.len(), 2, "{:?}", launch.calls);
        assert_eq!(launch.calls[0].0, "planned");
        assert!(
            launch.calls[0].1.contains(&S.to_string()),
            "{:?}",
            launch.calls[0]
        );
        assert_eq!(launch.calls[1], ("as asked", fresh));
        assert_eq!(launch.between, 1);
        assert_eq!(w.rows(), [row("fallback", "resume-refused", 0)]);
        let store = w.store.lock();
        assert_eq!(
            store.session_head(S).unwrap(),
            None,
            "the refused session is forgotten"
        );
        let last = store
            .last_attempt(&w.key.node, &w.key.message, 0)
            .unwrap()
            .unwrap();
        assert_eq!(last.session, FRESH, "the rerun is the turn's last attempt");
    }

    #[test]
    fn a_resume_whose_output_reached_the_caller_stands_even_when_it_failed() {
        let w = World::new();
        let seen = ran(Exit::Code(1), Observation::default(), true);
        let mut launch = Fake::scripted([seen]);
        let exit = w.execute(w.prepared(resume(), None), &mut launch);
        assert_eq!(exit, Exit::Code(1));
        assert_eq!(launch.calls.len(), 1);
        assert_eq!(launch.between, 0);
        assert_eq!(w.rows(), [row("resumed", "resumed", 1)]);
        assert_eq!(
            w.store.lock().session_head(S).unwrap().as_deref(),
            Some("A1")
        );
    }

    #[test]
    fn a_transcript_too_long_resumes_the_compacted_session_instead() {
        let w = World::new();
        let fresh = Plan::Fresh {
            session: FRESH.into(),
            why: Why::Compacted(3),
        };
        let compacted = Plan::Resume {
            session: COMPACTED.into(),
            how: How::InPlace,
        };
        let mut launch = Fake::scripted([too_long(), answered()]);
        let exit = w.execute(w.prepared(fresh, Some(compacted)), &mut launch);
        assert_eq!(exit, Exit::Code(0));
        let planned: Vec<_> = launch.calls.iter().map(|(how, _)| *how).collect();
        assert_eq!(planned, ["planned", "planned"]);
        assert!(launch.calls[1].1.contains(&COMPACTED.to_string()));
        assert_eq!(w.rows(), [row("resumed", "compacted-too-long", 0)]);
    }

    #[test]
    fn a_resumed_turn_that_answered_is_recorded_once_and_pinned() {
        let w = World::new();
        let mut launch = Fake::scripted([answered()]);
        let exit = w.execute(w.prepared(resume(), None), &mut launch);
        assert_eq!(exit, Exit::Code(0));
        assert_eq!(w.rows(), [row("resumed", "resumed", 0)]);
        let store = w.store.lock();
        let pins = store.find_pins(&w.key.node).unwrap();
        assert_eq!(pins.len(), 1, "{pins:?}");
        assert_eq!(pins[0].session, S);
        assert_eq!(store.session_head(S).unwrap().as_deref(), Some("A2"));
    }
}
