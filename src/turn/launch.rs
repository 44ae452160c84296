//! How a turn's runs start — a new CLI per run ([`Cold`]), a live CLI (see
//! `super::warm`), or the CLI that already answered an Agent SDK caller
//! (see `super::handshake`) — and what every run starts with ([`Ctx`]);
//! with [`release`], which ends a session's live process before a cold run
//! writes to the session in place.

use super::attempt::Attempt;
use super::plan::{How, Plan};
use crate::env;
use crate::invocation::Managed;
use crate::runner::{self, signals::ChildPid, Finished, Spec, Watch};
use crate::store::runs::Engine;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

/// What the turn runs with, whatever its plan.
pub struct Ctx<'a> {
    pub(super) real: &'a Path,
    pub(super) guard: &'a str,
    pub(super) child: ChildPid,
    pub(super) managed: &'a Managed,
    /// The caller's argv as the turn's session runs it (a call without
    /// persistence: the flag left out; see `turn::run`). Every stage reads
    /// it here.
    pub(super) args: &'a [OsString],
    /// Answers the caller already had (the shim gave them): every run's
    /// are dropped (see `handshake`).
    pub(super) answered: std::sync::OnceLock<runner::tee::Answers>,
    /// The caller's session: later messages that re-send its transcript
    /// go as their new part only (armed by the turn; see `crate::resend`).
    pub(super) live: runner::live::Live,
    /// The store, opened on a thread from the turn's start.
    pub(super) opening: super::lookup::Opening,
    /// Why the turn ran cold where it might have run in a live CLI (set by
    /// `super::warm::Warm::new`): said in its reason, counted in the metrics.
    pub(super) cold: std::sync::OnceLock<crate::warm::Refusal>,
}

impl Ctx<'_> {
    pub(super) fn spawn(&self, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
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
            live: Some(self.live.clone()),
        };
        runner::run(spec, &self.child, watch)
            .unwrap_or_else(|e| crate::runner::exec::cannot_run(self.real, &e))
    }
}

impl Ctx<'_> {
    /// The turn's message starts the caller's session: from now on its later
    /// messages that re-send the transcript may go as their new part only.
    pub(super) fn arm_live(&self, prompt: &crate::prompt::Prompt) {
        let crate::prompt::Prompt::StreamJson { line, more, .. } = prompt else {
            return;
        };
        let armed = crate::resend::armed(self.managed) && !crate::env::resend_kept();
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.begin(line, more.is_empty(), armed);
    }

    /// The runs log's reason, with what was cut of the session's later
    /// messages.
    pub(super) fn why_with_live(&self, why: &str) -> String {
        let why = match self.cold.get() {
            Some(r) => format!("{why}; {}", r.text),
            None => why.to_owned(),
        };
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        match live.cut {
            0 => why,
            n => format!(
                "{why}; {n} of {} later messages re-sent the live session's transcript \
                 and went as their new part only ({} bytes not sent again)",
                live.later, live.saved
            ),
        }
    }

    /// What the caller's result should say of the cost, for attempt `a`.
    pub(super) fn own_cost(&self, a: &Attempt) -> Option<crate::cost::Own> {
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
    /// How the last run ran, for the runs log.
    fn engine(&self) -> Engine {
        Engine::Cold
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
            crate::warm::client::release(session);
        }
        ctx.spawn(a, watch)
    }

    fn as_asked(&mut self, ctx: &Ctx<'_>, a: &Attempt, watch: Option<Arc<dyn Watch>>) -> Finished {
        ctx.spawn(a, watch)
    }
}
