//! Stage 6, record: the pin a successful run earns (pure: [`next_pin`]),
//! written as soon as the run has its result — before the result reaches
//! the caller, who may start the next turn at once — and taken back should
//! the run fail after all. Also what the turn spent ([`spent`]).

use super::lookup::{LeaseGuard, SharedStore};
use super::plan::Plan;
use crate::dialect::Conversation;
use crate::events::Usage;
use crate::identity::{self, Chain, ConvKey, PreambleHash, Scope, ScopeParts};
use crate::observe::Observation;
use crate::store::pins::{NewPin, Ownership};
use crate::store::runs::{Engine, Kind, Run, Spent, UsageFrom};
use crate::{debug, error};
use std::sync::Mutex;

/// What a turn's pin is made of, known before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PinContext {
    pub scope: Scope,
    pub parts: ScopeParts,
    /// The chain this turn's own chain extends (prior turns, last reply
    /// included).
    pub base: Chain,
    pub current: String,
    /// User turns including this one.
    pub turns: usize,
    pub preamble: Option<PreambleHash>,
    pub conv_key: Option<ConvKey>,
    pub cwd: String,
    pub config_dir: String,
    pub ownership: Ownership,
    /// The prompt to keep with the pin, for a next turn recognised by
    /// content: kept for first turns and for turns so recognised.
    pub keep: Option<KeepPrompt>,
    /// See `Run::replay_misses_prefix` (set by the turn, which reads the
    /// kept prompt it compares with).
    pub replay_misses_prefix: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeepPrompt {
    pub prompt: std::sync::Arc<str>,
    /// The pin this turn continued by content.
    pub continues: Option<i64>,
}

impl PinContext {
    pub fn new(
        scope: Scope,
        parts: ScopeParts,
        base: Chain,
        conv: &Conversation,
        cwd: &str,
        config_dir: &str,
        ownership: Ownership,
    ) -> PinContext {
        let first = conv.prior_user_turns().next().unwrap_or(&conv.current);
        let (turns, conv_key) = match &conv.continued {
            Some(c) => (c.turns + 1, c.conv_key.clone()),
            None => (
                conv.prior_user_turns().count() + 1,
                Some(ConvKey::of(first)),
            ),
        };
        PinContext {
            scope,
            parts,
            base,
            current: conv.current.clone(),
            turns,
            preamble: PreambleHash::of(conv.preamble.as_deref()),
            conv_key,
            cwd: cwd.to_owned(),
            config_dir: config_dir.to_owned(),
            ownership,
            keep: None,
            replay_misses_prefix: false,
        }
    }

    /// The same, keeping `prompt` with the pin where a next turn may be
    /// matched against it by content: a first turn, or a turn so matched.
    pub fn keeping(mut self, conv: &Conversation, prompt: Option<&str>) -> PinContext {
        self.keep = match (&conv.continued, conv.has_history(), prompt) {
            (Some(c), _, Some(p)) => Some(KeepPrompt {
                prompt: p.into(),
                continues: Some(c.pin),
            }),
            (None, false, Some(p)) => Some(KeepPrompt {
                prompt: p.into(),
                continues: None,
            }),
            _ => None,
        };
        self
    }
}

/// Why a run earns no pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotPinned {
    /// Run as the caller asked: the shim chose no session.
    AsIs,
    /// The CLI reported another session than the one planned.
    OtherSession(String),
    /// The run answered several messages (an SDK session in one process).
    SeveralResults,
    /// No reply to prove receipt with.
    NoReply,
}

/// The pin a successful run earns. `file_head`: the session file's last
/// assistant uuid, for output formats that print none.
pub fn next_pin(
    plan: &Plan,
    ctx: &PinContext,
    obs: &Observation,
    file_head: Option<String>,
) -> Result<NewPin, NotPinned> {
    if matches!(plan, Plan::AsIs { .. }) {
        return Err(NotPinned::AsIs);
    }
    let session = plan.target_session();
    let seen = obs
        .init_session
        .as_deref()
        .or(obs.result.as_ref().and_then(|r| r.session_id.as_deref()));
    if let Some(seen) = seen.filter(|s| *s != session) {
        return Err(NotPinned::OtherSession(seen.to_owned()));
    }
    if obs.results > 1 {
        return Err(NotPinned::SeveralResults);
    }
    let reply_hashes = identity::reply_hashes(obs);
    if reply_hashes.is_empty() {
        return Err(NotPinned::NoReply);
    }
    let chain = ctx.base.user(&ctx.current);
    Ok(NewPin {
        scope: ctx.scope.clone(),
        node: chain.node(&ctx.scope),
        chain,
        parts: ctx.parts.clone(),
        conv_key: ctx.conv_key.clone(),
        session: session.to_owned(),
        assistant_uuid: obs.assistant_uuids.last().cloned().or(file_head),
        reply_hashes,
        preamble_hash: ctx.preamble.clone(),
        turns: ctx.turns,
        cwd: ctx.cwd.clone(),
        reply_preview: obs
            .reply()
            .unwrap_or("")
            .chars()
            .take(120)
            .collect::<String>()
            .trim()
            .to_owned(),
    })
}

/// A run's observation with its reply as the session file holds it (the
/// caller stopped reading before the output ended): what the whole output
/// would have shown of it.
pub fn with_whole_reply(obs: &Observation, reply: crate::sessions::reply::Reply) -> Observation {
    Observation {
        assistant_uuids: reply.uuids,
        assistant_texts: reply.texts,
        text: Some(reply.last),
        answered: true,
        ..obs.clone()
    }
}

/// What a turn used and cost. The CLI's totals run over the whole session
/// (also across resumes and forks), so a turn's cost is the total after it
/// less the total the CLI started from (`base`: the resumed session's saved
/// total, zero for a new one). Unknown stays unknown.
pub fn spent(
    obs: &Observation,
    base: Option<f64>,
    from_file: Option<Usage>,
    saved_total: Option<f64>,
) -> Spent {
    let result = obs.result.as_ref();
    let usage = match (result, from_file) {
        (Some(r), _) => Some((r.usage, UsageFrom::Result)),
        (None, Some(u)) => Some((u, UsageFrom::SessionFile)),
        (None, None) => None,
    };
    let total = result.and_then(|r| r.total_cost_usd).or(saved_total);
    // The CLI's own figure for the turn, where it prints one (a live
    // process's totals run on from its previous turns, its file's saved
    // total only at exit); else the total less where it started.
    let own = result
        .and_then(|r| r.turn_cost_usd)
        .filter(|_| obs.results == 1);
    let cost = match (own, total, base) {
        (Some(c), _, _) => Some(c),
        (None, Some(t), Some(b)) if t + 1e-9 >= b => Some(t - b),
        _ => None,
    };
    Spent {
        usage,
        cost_usd: cost,
        total_cost_usd: total,
    }
}

/// How long the end of a streamed reply waits for the session file to hold
/// the turn (the CLI writes it within milliseconds of `message_stop`).
const SEAL_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// A run's row as far as it is known before the run ends: written when the
/// caller is about to have the whole reply (a shim killed then still leaves
/// it in `log` and `stats`), and completed at exit.
#[derive(Debug, Clone)]
pub struct RunDraft {
    pub cwd: String,
    pub kind: Kind,
    pub why_code: &'static str,
    pub why: String,
    pub bytes_in: usize,
    pub bytes_sent: usize,
    pub engine: Engine,
    /// The running cost the CLI starts from (see [`spent`]).
    pub base_cost: Option<f64>,
}

/// Writes the pin when the result arrives (on the output thread, before the
/// result's bytes are passed on), or at exit for text output; takes it back
/// when the run turns out to have failed.
pub struct Recorder {
    store: SharedStore,
    plan: Plan,
    ctx: PinContext,
    config_dir: std::path::PathBuf,
    /// The session's head before this run (restored if the pin is undone).
    head_before: Option<String>,
    lease: Mutex<Option<LeaseGuard>>,
    state: Mutex<State>,
    /// The attempt row of this run: marked answered at the result, so a
    /// shim killed after it leaves nothing a retry would continue.
    attempt: Option<i64>,
    /// The run's row, written ahead (see [`RunDraft`]).
    draft: Option<RunDraft>,
}

#[derive(Default)]
struct State {
    pinned: Option<i64>,
    /// The run's row, once written ahead.
    run: Option<i64>,
    input_closed: bool,
    has_result: bool,
    /// The reply forms of a pin made at the seal.
    sealed_with: Vec<identity::ReplyHash>,
}

impl Recorder {
    pub fn new(
        store: SharedStore,
        plan: Plan,
        ctx: PinContext,
        config_dir: std::path::PathBuf,
        head_before: Option<String>,
        lease: Option<LeaseGuard>,
    ) -> Recorder {
        Recorder {
            store,
            plan,
            ctx,
            config_dir,
            head_before,
            lease: Mutex::new(lease),
            state: Mutex::new(State::default()),
            attempt: None,
            draft: None,
        }
    }

    pub fn with_attempt(mut self, id: Option<i64>) -> Recorder {
        self.attempt = id;
        self
    }

    pub fn with_run(mut self, draft: RunDraft) -> Recorder {
        self.draft = Some(draft);
        self
    }

    /// The run's row if it was written ahead: the exit completes it.
    pub fn run_row(&self) -> Option<i64> {
        self.state().run
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A result event arrived; its bytes have not reached the caller yet.
    pub fn at_result(&self, obs: &Observation) {
        let mut st = self.state();
        st.has_result = true;
        if let Some(id) = self.attempt {
            // On a shared store this is queued, and goes with the pin.
            let answered = crate::store::attempts::Outcome::Result;
            if let Err(e) = self.store.lock().end_attempt(id, answered) {
                error!("recording the attempt's result: {e:#}");
            }
        }
        if obs.results > 1 {
            self.undo(&mut st);
        } else if obs.has_success_result() {
            // Before the pin: on a shared store the row is queued, and goes
            // in the pin's round trip. An error result may be a refusal the
            // turn reruns from: its row is written at the end, by whichever
            // attempt answers.
            self.write_run(&mut st, obs);
            // Hashed again only for a pin made at the seal (a result's
            // reply is otherwise hashed once, by the pin).
            let sealed = std::mem::take(&mut st.sealed_with);
            if st.pinned.is_some() && !sealed.is_empty() && sealed != identity::reply_hashes(obs) {
                // Pinned at the seal, before the result's own text was
                // known: pinned again with every form of the reply.
                self.undo(&mut st);
            }
            if st.pinned.is_none() {
                self.pin(&mut st, obs);
            }
        }
        self.maybe_draining(&st);
        // The attempt's end is stored before the caller has the result (a
        // retry then knows the message was answered).
        self.store.lock().flush();
    }

    /// A streaming caller is about to have the whole reply (see
    /// `runner::seal`): the session file holds the turn, no result yet.
    pub fn sealed(&self, obs: &Observation) {
        let mut st = self.state();
        if obs.results > 0 || !obs.answered || st.pinned.is_some() {
            return;
        }
        // The CLI appends the record just after it prints `message_stop`
        // (seen on 2.1.330 against a server that answers at once): a pin is
        // made only once the session file holds it, or not at all.
        let Some(uuid) = obs.assistant_uuids.last() else {
            return;
        };
        // Nothing is waited for that would earn no pin (a run as asked,
        // another session…).
        if next_pin(&self.plan, &self.ctx, obs, None).is_err() {
            return;
        }
        let waited = std::time::Instant::now();
        let holds = self.file_ends_at(uuid);
        debug!("sealed: waited {:?} for the session file", waited.elapsed());
        if !holds {
            debug!(
                "sealed: the session file does not hold {uuid} yet; not pinned before the result"
            );
            return;
        }
        // The row first: queued on a shared store, it goes with the pin.
        self.write_run(&mut st, obs);
        self.pin(&mut st, obs);
        st.sealed_with = identity::reply_hashes(obs);
        self.store.lock().flush();
    }

    /// Whether the session's file ends at the assistant record `uuid`,
    /// waiting for it a little (`SEAL_PATIENCE`).
    fn file_ends_at(&self, uuid: &str) -> bool {
        let deadline = std::time::Instant::now() + SEAL_PATIENCE;
        loop {
            let file = crate::sessions::find(&self.config_dir, self.plan.target_session());
            if file.is_some_and(|f| crate::sessions::ends_at(&f, uuid)) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// The run's row, written once ahead of its end.
    fn write_run(&self, st: &mut State, obs: &Observation) {
        let Some(d) = self.draft.as_ref().filter(|_| st.run.is_none()) else {
            return;
        };
        let run = Run {
            cwd: &d.cwd,
            kind: d.kind,
            why_code: d.why_code,
            why: &d.why,
            exit: 0,
            bytes_in: d.bytes_in,
            bytes_sent: d.bytes_sent,
            spent: spent(obs, d.base_cost, None, None),
            session: Some(self.plan.target_session()),
            conv_key: self.conv_key(),
            engine: d.engine,
            replay_misses_prefix: self.replay_misses_prefix(),
            // Known at its end (`end_run` writes the row anew).
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        };
        match self.store.lock().begin_run(&run) {
            Ok(id) => st.run = Some(id),
            Err(e) => error!("recording the run ahead: {e:#}"),
        }
    }

    /// The caller's input ended: the CLI can take no further message.
    pub fn input_closed(&self) {
        let mut st = self.state();
        st.input_closed = true;
        self.maybe_draining(&st);
    }

    /// The run ended: pin what text output could only prove now, or take
    /// back a pin whose run failed after its result.
    pub fn at_exit(&self, obs: &Observation, succeeded: bool) {
        let mut st = self.state();
        if !succeeded || obs.results > 1 {
            self.undo(&mut st);
        } else if st.pinned.is_none() {
            self.pin(&mut st, obs);
        }
    }

    /// Hand the lease on (to the run that replaces this one).
    pub fn take_lease(&self) -> Option<LeaseGuard> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Release the lease (when the run is over).
    pub fn finish(&self) {
        let lease = self.lease.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(lease);
    }

    /// The conversation's stable key, for the runs log.
    pub fn conv_key(&self) -> Option<&str> {
        self.ctx.conv_key.as_ref().map(ConvKey::as_str)
    }

    /// See `Run::replay_misses_prefix`.
    pub fn replay_misses_prefix(&self) -> bool {
        self.ctx.replay_misses_prefix
    }

    fn maybe_draining(&self, st: &State) {
        if st.has_result && st.input_closed {
            let lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(lease) = lease.as_ref() {
                lease.mark_draining();
            }
        }
    }

    fn pin(&self, st: &mut State, obs: &Observation) {
        // A caller that stopped reading early left the observer a part of
        // the reply, and a terminal's is mixed with stderr's bytes: the
        // session file has it whole, or nothing is pinned (a part would
        // match no replay of the reply, or a truncated one).
        let whole;
        let partial = obs.cut || obs.at_terminal;
        let obs = match partial && obs.result.is_none() && !matches!(self.plan, Plan::AsIs { .. }) {
            false => obs,
            true => {
                let file = crate::sessions::find(&self.config_dir, self.plan.target_session());
                match file.and_then(|f| crate::sessions::reply::last_reply(&f)) {
                    Some(reply) => {
                        whole = with_whole_reply(obs, reply);
                        &whole
                    }
                    None => {
                        debug!("not pinned: the output was not seen whole (a caller that stopped reading, a terminal), and the session file holds no finished reply");
                        return;
                    }
                }
            }
        };
        let file_head = || {
            crate::sessions::find(&self.config_dir, self.plan.target_session())
                .and_then(|f| crate::sessions::last_assistant_uuid(&f))
        };
        let head = obs.assistant_uuids.is_empty().then(file_head).flatten();
        match next_pin(&self.plan, &self.ctx, obs, head) {
            Ok(pin) => {
                let added =
                    self.store
                        .lock()
                        .add_pin(&pin, self.ctx.ownership, &self.ctx.config_dir);
                match added {
                    Ok(id) => {
                        debug!("pinned {} turns → {}", pin.turns, pin.session);
                        st.pinned = Some(id);
                        self.keep_prompt(id, obs);
                    }
                    Err(e) => error!("pinning failed: {e:#}"),
                }
            }
            Err(why) => debug!("not pinned: {why:?}"),
        }
    }

    fn keep_prompt(&self, pin: i64, obs: &Observation) {
        let Some(keep) = &self.ctx.keep else {
            return;
        };
        let replies = identity::reply_forms(obs);
        let kept = crate::store::prompts::Kept {
            prompt: &keep.prompt,
            replies: &replies,
            continues: keep.continues,
        };
        if let Err(e) = self.store.lock().keep_prompt(pin, &self.ctx.scope, &kept) {
            error!("keeping the prompt of pin {pin}: {e:#}");
        }
    }

    fn undo(&self, st: &mut State) {
        if let Some(id) = st.pinned.take() {
            let session = self.plan.target_session();
            if let Err(e) = self
                .store
                .lock()
                .unpin(id, session, self.head_before.as_deref())
            {
                error!("taking back the pin of {session}: {e:#}");
            }
        }
    }
}

impl crate::runner::Watch for Recorder {
    fn result(&self, obs: &Observation) {
        self.at_result(obs)
    }

    fn sealed(&self, obs: &Observation) {
        Recorder::sealed(self, obs)
    }

    fn input_closed(&self) {
        Recorder::input_closed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ResultEvent;
    use crate::turn::plan::{How, Why};

    const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const N: &str = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";

    fn ctx() -> PinContext {
        let conv =
            crate::dialect::detect("Human: a\n\nAssistant: b\n\nHuman: c", None).conversation("");
        let parts = ScopeParts::default();
        let base = Chain::empty().user("a").reply("b");
        PinContext::new(
            parts.scope(),
            parts,
            base,
            &conv,
            "/w",
            "/c",
            Ownership::Kept,
        )
    }

    fn obs(session: &str, results: usize, reply: Option<&str>) -> Observation {
        Observation {
            init_session: Some(session.into()),
            assistant_uuids: vec!["A2".into()],
            results,
            result: reply.map(|r| ResultEvent {
                text: Some(r.into()),
                session_id: Some(session.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn next_pin_table() {
        let resume = Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        };
        let fork = Plan::Resume {
            session: S.into(),
            how: How::ForkHead { new: N.into() },
        };
        let asis = Plan::AsIs {
            why: Why::CallerSessionUnknown,
        };
        let c = ctx();
        let rows: Vec<(&Plan, Observation, Result<&str, NotPinned>)> = vec![
            (&resume, obs(S, 1, Some("d")), Ok(S)),
            (&fork, obs(N, 1, Some("d")), Ok(N)),
            (
                &fork,
                obs(S, 1, Some("d")),
                Err(NotPinned::OtherSession(S.into())),
            ),
            (
                &resume,
                obs(S, 2, Some("d")),
                Err(NotPinned::SeveralResults),
            ),
            (&resume, obs(S, 1, Some("  ")), Err(NotPinned::NoReply)),
            (&resume, obs(S, 0, None), Err(NotPinned::NoReply)),
            (&asis, obs(S, 1, Some("d")), Err(NotPinned::AsIs)),
        ];
        for (i, (plan, o, want)) in rows.into_iter().enumerate() {
            let got = next_pin(plan, &c, &o, None);
            assert_eq!(
                got.as_ref()
                    .map(|p| p.session.as_str())
                    .map_err(Clone::clone),
                want,
                "row {i}"
            );
            if let Ok(p) = got {
                assert_eq!(
                    p.node,
                    Chain::empty().user("a").reply("b").user("c").node(&c.scope)
                );
                assert_eq!((p.turns, p.assistant_uuid.as_deref()), (2, Some("A2")));
                assert_eq!(p.conv_key, Some(ConvKey::of("a")));
            }
        }
        // Text output has no uuids: the session file's head is used.
        let text = Observation {
            text: Some("d\n".into()),
            ..Default::default()
        };
        let p = next_pin(&resume, &c, &text, Some("F".into())).unwrap();
        assert_eq!(p.assistant_uuid.as_deref(), Some("F"));
    }

    #[test]
    fn a_reply_read_in_part_is_pinned_whole_from_the_session_file() {
        let resume = Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        };
        let whole = "a long answer, all of it";
        let part = Observation {
            text: Some("a long an".into()),
            cut: true,
            ..Default::default()
        };
        let reply = crate::sessions::reply::Reply {
            uuids: vec!["A9".into()],
            texts: vec![whole.into()],
            last: whole.into(),
        };
        let pin = next_pin(&resume, &ctx(), &with_whole_reply(&part, reply), None).unwrap();
        assert_eq!(pin.reply_hashes, vec![identity::ReplyHash::of(whole)]);
        assert_eq!(pin.assistant_uuid.as_deref(), Some("A9"));
    }

    #[test]
    fn a_pin_written_at_the_result_is_taken_back_if_the_run_fails_after_all() {
        let store = SharedStore::new(crate::store::Store::in_memory().unwrap());
        let c = ctx();
        // The session's head before the run: A1.
        store
            .lock()
            .add_pin(
                &crate::store::pins::NewPin::of_turns(S, "A1", "/w", &["a"], "b"),
                Ownership::Kept,
                "/c",
            )
            .unwrap();
        let plan = Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        };
        let rec = |store: &SharedStore| {
            Recorder::new(
                store.clone(),
                plan.clone(),
                c.clone(),
                "/none".into(),
                Some("A1".into()),
                None,
            )
        };
        let node = Chain::empty().user("a").reply("b").user("c").node(&c.scope);
        let ok = obs(S, 1, Some("d"));
        // Pinned at the result, before the exit.
        let r = rec(&store);
        r.at_result(&ok);
        assert_eq!(store.lock().find_pins(&node).unwrap().len(), 1);
        assert_eq!(store.lock().session_head(S).unwrap().as_deref(), Some("A2"));
        // The run then failed: the pin goes, the head is restored.
        r.at_exit(&ok, false);
        assert!(store.lock().find_pins(&node).unwrap().is_empty());
        assert_eq!(store.lock().session_head(S).unwrap().as_deref(), Some("A1"));
        // A second result in the same run undoes it too.
        let r = rec(&store);
        r.at_result(&ok);
        r.at_result(&obs(S, 2, Some("e")));
        assert!(store.lock().find_pins(&node).unwrap().is_empty());
        // Text output: no result event, pinned at a successful exit.
        let r = rec(&store);
        r.at_exit(&obs(S, 0, None), true);
        assert!(
            store.lock().find_pins(&node).unwrap().is_empty(),
            "no reply, no pin"
        );
        let mut text = obs(S, 0, None);
        text.text = Some("d\n".into());
        r.at_exit(&text, true);
        assert_eq!(store.lock().find_pins(&node).unwrap().len(), 1);
    }

    #[test]
    fn spent_is_the_turns_own_share_and_unknown_stays_unknown() {
        let mut o = obs(S, 1, Some("d"));
        if let Some(r) = o.result.as_mut() {
            r.total_cost_usd = Some(0.0711);
            r.usage.input_tokens = 5;
        }
        let s = spent(&o, Some(0.0680), None, None);
        assert!((s.cost_usd.unwrap() - 0.0031).abs() < 1e-9);
        assert_eq!(
            s.usage.map(|(u, f)| (u.input_tokens, f)),
            Some((5, UsageFrom::Result))
        );
        // Where the CLI started from is unknown: so is the turn's cost.
        assert_eq!(spent(&o, None, None, None).cost_usd, None);
        // Text output: usage and total from the session file.
        let text = Observation::default();
        let u = Usage {
            input_tokens: 7,
            ..Default::default()
        };
        let s = spent(&text, Some(0.5), Some(u), Some(0.75));
        assert_eq!(s.usage, Some((u, UsageFrom::SessionFile)));
        assert_eq!(s.cost_usd, Some(0.25));
        assert_eq!(spent(&text, Some(0.5), None, None), Spent::default());
    }
}
