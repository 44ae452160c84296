//! Gathering the facts for a turn (store, capabilities, identity, pins, the
//! session file, the lease), asking `plan` for a decision, and recording the
//! outcome. The effects around the pure `plan`.

use crate::dialect::{self, Conversation, Detection};
use crate::identity::{self, ScopeInput};
use crate::invocation::Managed;
use crate::observe::Observation;
use crate::plan::{self, Candidate, Caps, Facts, How, Miss, Plan};
use crate::prompt::Prompt;
use crate::sessions;
use crate::store::caps::{BinaryKey, Capabilities};
use crate::store::pins::NewPin;
use crate::store::runs::{Kind, Run};
use crate::store::Store;
use crate::{debug, env, error};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub struct Decision {
    pub plan: Plan,
    pub conv: Conversation,
    pub detection: Detection,
    pub scope: String,
    /// Chain hash of every prior turn, the last reply included: the node
    /// this turn's own node extends.
    base_node: String,
    pub cwd: String,
    /// Whether the preamble must be sent again on resume.
    send_preamble: bool,
    store: Store,
    config_dir: PathBuf,
    /// The session we hold the in-place lease on.
    lease: Option<String>,
}

/// Facts for `plan`, everything `explain` shows.
pub struct Gathered {
    pub detection: Detection,
    pub conv: Conversation,
    pub scope: String,
    /// Chain hash of the prior turns but the last reply (the lookup key).
    pub prior_node: String,
    /// The same with the last reply: what this turn's node extends.
    pub base_node: String,
    pub caps: Capabilities,
    pub candidate: Result<Candidate, Miss>,
    pub preamble_changed: bool,
}

/// What the prompt says, or `None` when the shim cannot act on it (not
/// text, or several stream-json lines that are not a conversation).
pub fn understand(prompt: &Prompt) -> Option<(Detection, Conversation)> {
    if let Prompt::StreamJson { line, more, .. } = prompt {
        if !more.is_empty() {
            let lines: Vec<&[u8]> = std::iter::once(line)
                .chain(more)
                .map(Vec::as_slice)
                .collect();
            let messages = crate::prompt::user_line_messages(&lines)?;
            let conv = dialect::json::parse_messages("stream-lines", &messages, None)?;
            return Some((Detection::Recognised(conv.clone()), conv));
        }
    }
    let text = prompt.text()?;
    let detection = dialect::detect(&text, env::dialect().as_deref());
    let conv = detection.conversation(&text);
    Some((detection, conv))
}

/// `Ok(None)`: nothing to decide (no readable prompt); run unchanged.
pub fn decide(real: &Path, m: &Managed, prompt: &Prompt, guard: &str) -> Result<Option<Decision>> {
    let Some(understood) = understand(prompt) else {
        return Ok(None);
    };
    let Place {
        mut store,
        config_dir,
        cwd,
    } = Place::here()?;
    let g = gather(
        &mut store,
        real,
        m,
        understood,
        &config_dir,
        &cwd,
        guard,
        true,
    )?;
    let lease = match &g.candidate {
        Ok(c) if c.leased => Some(c.session.clone()),
        _ => None,
    };
    let plan = plan::plan(facts(
        m,
        &g.caps,
        g.candidate,
        uuid::Uuid::new_v4().to_string(),
    ));
    let mut d = Decision {
        plan,
        conv: g.conv,
        detection: g.detection,
        scope: g.scope,
        base_node: g.base_node,
        cwd,
        send_preamble: env::preamble_keep() || g.preamble_changed,
        store,
        config_dir,
        lease,
    };
    // Holding a lease we will not use would block others.
    if !matches!(
        d.plan,
        Plan::Resume {
            how: How::InPlace,
            ..
        }
    ) {
        d.release_lease();
    }
    Ok(Some(d))
}

/// Where a turn's facts live: the store, Claude Code's config dir, and the
/// canonical cwd.
pub struct Place {
    pub store: Store,
    pub config_dir: PathBuf,
    pub cwd: String,
}

impl Place {
    pub fn here() -> Result<Place> {
        Ok(Place {
            store: Store::open_default()?,
            config_dir: env::claude_config_dir().context("no Claude config dir (HOME unset)")?,
            cwd: std::env::current_dir()?
                .canonicalize()?
                .to_string_lossy()
                .into_owned(),
        })
    }
}

/// The plain facts `plan` decides on, from the invocation, the environment
/// and what `gather` found.
pub fn facts(
    m: &Managed,
    c: &Capabilities,
    candidate: Result<Candidate, Miss>,
    new_id: String,
) -> Facts {
    Facts {
        caller_session: m.caller_resume.clone(),
        forced_fresh: env::fresh(),
        candidate,
        caps: Caps {
            resume: c.resume,
            fork_session: c.fork_session,
            session_id: c.session_id,
            resume_session_at: c.resume_session_at,
        },
        new_id,
    }
}

/// Collect the facts. With `lease` false nothing is changed (for `explain`).
#[allow(clippy::too_many_arguments)]
pub fn gather(
    store: &mut Store,
    real: &Path,
    m: &Managed,
    (detection, conv): (Detection, Conversation),
    config_dir: &Path,
    cwd: &str,
    guard: &str,
    lease: bool,
) -> Result<Gathered> {
    let key = BinaryKey::of(real)?;
    let caps = match store.capabilities(&key)? {
        Some(c) => c,
        None => {
            let c = crate::probe::probe(real, guard).context("probing the real claude")?;
            store.save_capabilities(&key, &c)?;
            c
        }
    };
    let config = config_dir.to_string_lossy();
    let input = ScopeInput {
        cwd,
        config_dir: &config,
        binary: &key.fingerprint(),
        args: &m.args,
    };
    let scope = identity::scope(&input, |p| std::fs::read(p).ok());
    let mut preamble_changed = false;
    // The node: every prior turn, earlier replies included, but the last
    // reply, which is the proof of receipt.
    let (before_last, last_reply) = match conv.prior.split_last() {
        Some((t, rest)) if t.role == dialect::Role::Assistant => (rest, Some(t.text.as_str())),
        _ => (&conv.prior[..], None),
    };
    let prior_node = identity::chain_turns(&scope, before_last);
    let base_node = match last_reply {
        Some(reply) => identity::chain_reply(&prior_node, reply),
        None => prior_node.clone(),
    };
    let candidate = if !conv.has_history() {
        Err(Miss::NoHistory)
    } else {
        let pins = store.find_pins(&scope, &prior_node)?;
        let replayed = identity::reply_hash(conv.last_assistant().unwrap_or(""));
        match plan::select(&pins, &replayed) {
            Err(miss) => Err(miss),
            Ok(pin) => {
                preamble_changed =
                    pin.preamble_hash != identity::preamble_hash(conv.preamble.as_deref());
                let file = sessions::find(config_dir, &pin.session);
                let at = pin.assistant_uuid.as_deref();
                // The node is the head only if both we and the file agree:
                // someone may have resumed the session by hand since.
                let is_head = store.session_head(&pin.session)?.as_deref() == at
                    && file
                        .as_deref()
                        .and_then(sessions::last_assistant_uuid)
                        .as_deref()
                        == at;
                let leased = lease
                    && is_head
                    && store.try_lease(&pin.session, at, std::process::id() as i32, alive)?;
                let file_exists = file.is_some();
                Ok(Candidate {
                    session: pin.session.clone(),
                    at: pin.assistant_uuid.clone(),
                    file_exists,
                    is_head,
                    leased,
                })
            }
        }
    };
    Ok(Gathered {
        detection,
        conv,
        scope,
        prior_node,
        base_node,
        caps,
        candidate,
        preamble_changed,
    })
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

impl Decision {
    /// The prompt text to send instead of the caller's, on resume.
    pub fn delta(&self) -> Option<String> {
        matches!(self.plan, Plan::Resume { .. } | Plan::Caller { .. })
            .then(|| crate::rewrite::delta(&self.conv, self.send_preamble))
    }

    pub fn kind(&self) -> Kind {
        match &self.plan {
            Plan::Fresh { .. } => Kind::Fresh,
            Plan::Resume {
                how: How::InPlace, ..
            }
            | Plan::Caller { .. } => Kind::Resumed,
            Plan::Resume { .. } => Kind::Forked,
            Plan::AsIs { .. } => Kind::Unchanged,
        }
    }

    /// The CLI refused the resume: drop that session's pins, plan fresh.
    pub fn refused(&mut self) {
        if let Plan::Resume { session, .. } = &self.plan {
            if let Err(e) = self.store.drop_session(session) {
                error!("dropping refused session {session}: {e:#}");
            }
        }
        self.release_lease();
        self.plan = Plan::Fresh {
            session: uuid::Uuid::new_v4().to_string(),
            why: plan::Why::SessionFileGone,
        };
    }

    /// Pin the node this successful run created.
    pub fn record(&mut self, obs: &Observation) {
        if let Err(e) = self.try_record(obs) {
            error!("pinning failed: {e:#}");
        }
    }

    fn try_record(&mut self, obs: &Observation) -> Result<()> {
        if matches!(self.plan, Plan::AsIs { .. }) {
            return Ok(());
        }
        let session = self.plan.target_session().to_owned();
        let seen = obs
            .init_session
            .as_deref()
            .or(obs.result.as_ref().and_then(|r| r.session_id.as_deref()));
        if seen.is_some_and(|s| s != session) || obs.results > 1 {
            debug!("not pinning: saw session {seen:?}, {} results", obs.results);
            return Ok(());
        }
        let hashes = identity::reply_hashes(obs);
        if hashes.is_empty() {
            return Ok(());
        }
        let uuid = obs.assistant_uuids.last().cloned().or_else(|| {
            sessions::find(&self.config_dir, &session)
                .and_then(|f| sessions::last_assistant_uuid(&f))
        });
        let turns = self.conv.prior_user_turns().count() + 1;
        let chain = identity::chain_step(&self.base_node, &self.conv.current);
        let preamble = identity::preamble_hash(self.conv.preamble.as_deref());
        let preview: String = obs.reply().unwrap_or("").chars().take(120).collect();
        self.store.add_pin(&NewPin {
            scope: &self.scope,
            chain: &chain,
            session: &session,
            assistant_uuid: uuid.as_deref(),
            reply_hashes: &hashes,
            preamble_hash: preamble.as_deref(),
            turns,
            cwd: &self.cwd,
            reply_preview: preview.trim(),
        })?;
        debug!("pinned {turns} turns → {session} at {uuid:?}");
        Ok(())
    }

    pub fn log(&self, run: &Run<'_>) {
        if let Err(e) = self.store.log_run(run) {
            error!("recording the run failed: {e:#}");
        }
    }

    fn release_lease(&mut self) {
        if let Some(session) = self.lease.take() {
            if let Err(e) = self
                .store
                .release_lease(&session, std::process::id() as i32)
            {
                error!("releasing lease on {session}: {e:#}");
            }
        }
    }

    pub fn finish(mut self) {
        self.release_lease();
    }
}
