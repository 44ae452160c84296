//! Stage 2, lookup: the facts a plan is made from — the store, the real
//! binary's capabilities, this turn's identity, the pins of its node (or,
//! when there are none, where else the same turns were seen), the session
//! file, and the in-place lease, held as a guard that releases on drop.

use super::plan::{self, Candidate, PinMiss};
use crate::argv::ParsedArgs;
use crate::dialect::{Conversation, Role};
use crate::identity::{Chain, Node, PreambleHash, ReplyHash, Scope, ScopeInput, ScopeParts};
use crate::probe::Capabilities;
use crate::sessions;
use crate::store::caps::BinaryKey;
use crate::store::pins::Lease;
use crate::store::Store;
use crate::{env, error};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The store, shared with the output thread that pins at the result.
#[derive(Clone)]
pub struct SharedStore(Arc<Mutex<Store>>);

impl SharedStore {
    pub fn new(store: Store) -> SharedStore {
        SharedStore(Arc::new(Mutex::new(store)))
    }

    /// The store; a poisoned lock (a panic elsewhere) still yields it.
    pub fn lock(&self) -> MutexGuard<'_, Store> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a turn's facts live: the store, Claude Code's config dir, and the
/// canonical cwd.
pub struct Place {
    pub store: SharedStore,
    pub config_dir: PathBuf,
    pub cwd: String,
}

impl Place {
    pub fn here() -> Result<Place> {
        Ok(Place {
            store: SharedStore::new(Store::open_default(crate::warm::client::store_connection)?),
            config_dir: env::claude_config_dir().context("no Claude config dir (HOME unset)")?,
            cwd: std::env::current_dir()
                .and_then(|d| d.canonicalize())
                .context("the working directory is gone (deleted or moved)")?
                .to_string_lossy()
                .into_owned(),
        })
    }

    /// What the real binary supports: cached by path, size and mtime, else
    /// probed once.
    pub fn capabilities(&self, real: &Path, guard: &str) -> Result<Capabilities> {
        let key = BinaryKey::of(real)?;
        if let Some(c) = self.store.lock().capabilities(&key)? {
            return Ok(c);
        }
        let c = crate::probe::probe(real, guard).context("probing the real claude")?;
        self.store.lock().save_capabilities(&key, &c)?;
        Ok(c)
    }
}

/// A turn's place and what the real binary supports, looked up on a thread
/// of their own from the turn's start: opening (and migrating) the store
/// then overlaps reading the prompt, reading it into turns and reaching the
/// keeper, instead of following them.
#[derive(Default)]
pub struct Opening(Mutex<Option<JoinHandle<Opened>>>);

type Opened = Result<(Place, Capabilities)>;

impl Opening {
    pub fn start(real: &Path, guard: &str) -> Opening {
        let (real, guard) = (real.to_path_buf(), guard.to_owned());
        let thread = std::thread::Builder::new()
            .name("opening".into())
            .spawn(move || open(&real, &guard))
            .map_err(|e| {
                crate::debug!("no thread to open the store on ({e}); opening it when needed")
            })
            .ok();
        Opening(Mutex::new(thread))
    }

    /// The thread's place and capabilities; looked up here when there is
    /// no thread (or it was asked already). Its panic is this thread's.
    pub fn take(&self, real: &Path, guard: &str) -> Opened {
        let thread = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        match thread.map(JoinHandle::join) {
            Some(Ok(opened)) => opened,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => open(real, guard),
        }
    }
}

fn open(real: &Path, guard: &str) -> Opened {
    let place = Place::here()?;
    let caps = place.capabilities(real, guard)?;
    Ok((place, caps))
}

/// Whether a lookup may change anything: a turn takes the in-place lease;
/// `explain` looks without touching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Turn,
    DryRun,
}

pub struct Query<'a> {
    pub args: &'a ParsedArgs,
    pub conv: &'a Conversation,
    /// Why no dialect fits the prompt, if none does.
    pub unrecognised: Option<&'a str>,
    pub caps: &'a Capabilities,
}

/// Facts for `plan`, and everything `explain` shows.
pub struct Found {
    pub parts: ScopeParts,
    pub scope: Scope,
    /// The node pins are looked up by (prior turns, the last reply left
    /// out: it is the proof of receipt).
    pub node: Node,
    /// The chain of every prior turn, the last reply included: what this
    /// turn's own chain extends.
    pub base: Chain,
    pub candidate: Result<Candidate, PinMiss>,
    pub preamble_changed: bool,
    /// The in-place lease, when taken.
    pub lease: Option<LeaseGuard>,
    /// Another live turn held the lease.
    pub busy: bool,
}

/// How long a turn waits for the previous turn of its conversation that
/// already has its result and only writes its closing records (measured:
/// 29–237 ms after the result), or for its live process that the keeper is
/// ending (at most 4 s), rather than branching.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// Where and with what this turn runs: its scope, part by part.
pub fn scope_of(place: &Place, args: &ParsedArgs, caps: &Capabilities) -> ScopeParts {
    let config = place.config_dir.to_string_lossy();
    let shared = place.store.lock().fleet().is_some();
    let env: Vec<(String, String)> = crate::env::all()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let input = ScopeInput {
        cwd: &place.cwd,
        config_dir: crate::identity::config_dir_in_scope(&config, shared),
        binary: &caps.version,
        args,
        env: &env,
    };
    ScopeParts::of(&input, |p| std::fs::read(p).ok())
}

pub fn lookup(place: &Place, q: &Query<'_>, mode: Mode) -> Result<Found> {
    let parts = scope_of(place, q.args, q.caps);
    let scope = parts.scope();
    // The node: every prior turn, earlier replies included, but the last
    // reply, which is the proof of receipt. A prompt recognised by content
    // names the chain it continues instead.
    let prior = &q.conv.prior;
    let (before_last, last_reply) = match prior.split_last() {
        Some((t, rest)) if t.role == Role::Assistant => (rest, Some(t.text.as_str())),
        _ => (&prior[..], None),
    };
    let lookup_chain = match &q.conv.continued {
        Some(c) => c.chain.clone(),
        None => Chain::of(before_last),
    };
    let base = match last_reply {
        Some(reply) => lookup_chain.reply(reply),
        None => lookup_chain.clone(),
    };
    let node = lookup_chain.node(&scope);
    let mut found = Found {
        parts,
        scope,
        node: node.clone(),
        base,
        candidate: Err(PinMiss::NoHistory),
        preamble_changed: false,
        lease: None,
        busy: false,
    };
    if let Some(why) = q.unrecognised {
        found.candidate = Err(PinMiss::NotRecognised(why.to_owned()));
        return Ok(found);
    }
    if !q.conv.has_history() {
        return Ok(found);
    }
    let pins = place.store.lock().find_pins(&node)?;
    let replayed = ReplyHash::of(q.conv.last_assistant().unwrap_or(""));
    let pin = match plan::select(&pins, &replayed) {
        Ok(pin) => pin,
        Err(PinMiss::NoPin { .. }) => {
            let elsewhere = place.store.lock().find_elsewhere(&lookup_chain)?;
            found.candidate = Err(PinMiss::NoPin {
                elsewhere: elsewhere
                    .map(|e| found.parts.differences(&e.parts))
                    .unwrap_or_default(),
            });
            return Ok(found);
        }
        Err(miss) => {
            found.candidate = Err(miss);
            return Ok(found);
        }
    };
    found.preamble_changed = pin.preamble_hash != PreambleHash::of(q.conv.preamble.as_deref());
    let at = pin.assistant_uuid.as_deref();
    let (head_in_store, lease, here) = head_and_fleet(place, &pin.session, at, mode)?;
    let file = sessions::find(&place.config_dir, &pin.session).filter(|_| here);
    // The node is the head only if both we and the file agree: someone may
    // have resumed the session by hand since, or a turn was killed there
    // (its message is in the file: resumed in place, the model would get it
    // twice; a branch at the node leaves it out).
    let file_head = || match (file.as_deref(), at) {
        (Some(f), Some(at)) => sessions::ends_at(f, at),
        (Some(f), None) => sessions::last_assistant_uuid(f).is_none(),
        (None, _) => false,
    };
    let mut is_head = head_in_store.as_deref() == at && file_head();
    if (is_head || lease.is_some()) && mode == Mode::Turn {
        let lease = match lease {
            Some(l) => l,
            None => take_lease(&place.store, &pin.session, at)?,
        };
        match lease {
            Lease::Taken => {
                found.lease = Some(LeaseGuard {
                    store: place.store.clone(),
                    session: pin.session.clone(),
                    pid: std::process::id() as i32,
                });
                // A holder we waited for may have written more since.
                is_head = file_head();
            }
            Lease::NotHead => is_head = false,
            Lease::Held { .. } => found.busy = true,
        }
    }
    // How often the CLI compacted it (a scan carried on as the file grows).
    let compactions = match file.as_deref() {
        Some(f) => place
            .store
            .lock()
            .scan(f)
            .map(|s| s.compactions)
            .unwrap_or(0),
        None => 0,
    };
    found.candidate = Ok(Candidate {
        session: pin.session.clone(),
        at: pin.assistant_uuid.clone(),
        file_exists: file.is_some(),
        is_head,
        leased: found.lease.is_some() || (mode == Mode::DryRun && is_head),
        compactions,
    });
    Ok(found)
}

/// The session's head as the store has it; on a fleet, with the lease
/// tried (a draining holder waited for) and this host's copy of the file
/// made the stored one: (head, lease, whether the file here may be used).
/// A fleet takes the lease first (a draining holder on another host
/// uploads its turn before it lets go), then brings the file here (see
/// `crate::fleet`). The head and a first try at the lease are one round
/// trip.
fn head_and_fleet(
    place: &Place,
    session: &str,
    at: Option<&str>,
    mode: Mode,
) -> Result<(Option<String>, Option<Lease>, bool)> {
    let first_try = match (place.store.lock().fleet(), mode) {
        (Some(fleet), Mode::Turn) => {
            // The file's scan is read next: in the lease's round trip.
            if let Some(f) = sessions::find(&place.config_dir, session) {
                fleet.want_scan(&f);
            }
            Some(fleet.head_and_lease(session, at)?)
        }
        _ => None,
    };
    let Some((head, tried)) = first_try else {
        return Ok((place.store.lock().session_head(session)?, None, true));
    };
    let lease = match tried {
        // A draining holder: wait for it as `take_lease` does.
        Some(Lease::Held { draining: true }) => Some(take_lease(&place.store, session, at)?),
        tried => tried,
    };
    let leased = lease == Some(Lease::Taken);
    let here = match place.store.lock().fleet() {
        Some(fleet) => crate::fleet::bring_here(
            fleet,
            (&place.config_dir, &place.cwd),
            session,
            at,
            leased,
            || crate::warm::client::release(session),
        ),
        None => true,
    };
    Ok((head, lease, here))
}

/// Take the lease, waiting (a bounded time) for a holder that is draining.
fn take_lease(store: &SharedStore, session: &str, at: Option<&str>) -> Result<Lease> {
    let pid = std::process::id() as i32;
    let start = Instant::now();
    loop {
        let lease = store
            .lock()
            .try_lease(session, at, pid, &crate::platform::alive)?;
        match lease {
            Lease::Held { draining: true } if start.elapsed() < DRAIN_WAIT => {
                std::thread::sleep(Duration::from_millis(4))
            }
            other => {
                if start.elapsed() > Duration::from_millis(4) {
                    crate::debug!("lease on {session}: {other:?} after {:?}", start.elapsed());
                }
                return Ok(other);
            }
        }
    }
}

/// The in-place lease on a session; released when dropped.
pub struct LeaseGuard {
    store: SharedStore,
    session: String,
    pid: i32,
}

impl LeaseGuard {
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The turn holding it has its result and takes no more input: a next
    /// turn may wait for it to end rather than branch.
    pub fn mark_draining(&self) {
        if let Err(e) = self.store.lock().mark_draining(&self.session, self.pid) {
            error!("marking {} draining: {e:#}", self.session);
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Err(e) = self.store.lock().release_lease(&self.session, self.pid) {
            error!("releasing lease on {}: {e:#}", self.session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pins::{NewPin, Ownership};

    struct World {
        _dir: tempfile::TempDir,
        place: Place,
        caps: Capabilities,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("claude");
        std::fs::create_dir_all(config.join("projects/-w")).unwrap();
        World {
            place: Place {
                store: SharedStore::new(Store::in_memory().unwrap()),
                config_dir: config,
                cwd: "/w".into(),
            },
            caps: Capabilities {
                version: "2.1.330".into(),
                resume: true,
                fork_session: true,
                session_id: true,
                resume_session_at: true,
            },
            _dir: dir,
        }
    }

    const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const A1: &str = "0b8e0435-8e12-4245-aa25-f674ed4e97a7";

    fn args(list: &[&str]) -> ParsedArgs {
        let v: Vec<std::ffi::OsString> = list.iter().map(Into::into).collect();
        crate::argv::parse(&v).unwrap()
    }

    fn conv() -> Conversation {
        crate::dialect::detect("Human: a\n\nAssistant: b\n\nHuman: c", None).conversation("")
    }

    /// Pin turn 1 ("a" answered "b") as a fresh session would.
    fn pin_first_turn(w: &World, a: &ParsedArgs, cwd: &str) {
        let config = w.place.config_dir.to_string_lossy();
        let parts = ScopeParts::of(
            &ScopeInput {
                cwd,
                config_dir: &config,
                binary: "2.1.330",
                args: a,
                env: &[],
            },
            |_| None,
        );
        let chain = Chain::empty().user("a");
        w.place
            .store
            .lock()
            .add_pin(
                &NewPin {
                    scope: parts.scope(),
                    node: chain.node(&parts.scope()),
                    chain,
                    parts,
                    conv_key: None,
                    session: S.into(),
                    assistant_uuid: Some(A1.into()),
                    reply_hashes: vec![ReplyHash::of("b")],
                    preamble_hash: None,
                    turns: 1,
                    cwd: cwd.into(),
                    reply_preview: "b".into(),
                },
                Ownership::Kept,
                &config,
            )
            .unwrap();
        std::fs::write(
            w.place.config_dir.join(format!("projects/-w/{S}.jsonl")),
            format!("{{\"type\":\"assistant\",\"uuid\":\"{A1}\"}}\n"),
        )
        .unwrap();
    }

    #[test]
    fn finds_the_pin_takes_the_lease_and_releases_it_on_drop() {
        let w = world();
        let a = args(&["-p"]);
        pin_first_turn(&w, &a, "/w");
        let c = conv();
        let q = Query {
            args: &a,
            conv: &c,
            unrecognised: None,
            caps: &w.caps,
        };
        let found = lookup(&w.place, &q, Mode::Turn).unwrap();
        let cand = found.candidate.clone().unwrap();
        assert!(cand.is_head && cand.leased && cand.file_exists);
        // A second turn meanwhile finds it busy (we are alive), and branches.
        let other = std::thread::spawn({
            let store = w.place.store.clone();
            move || store.lock().try_lease(S, Some(A1), 1, &|_| true).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(other, Lease::Held { draining: false });
        drop(found);
        assert_eq!(
            w.place
                .store
                .lock()
                .try_lease(S, Some(A1), 1, &|_| true)
                .unwrap(),
            Lease::Taken,
            "released on drop"
        );
        // A dry run takes nothing, and shows what a turn could do.
        let dry = lookup(&w.place, &q, Mode::DryRun).unwrap();
        assert!(dry.lease.is_none() && dry.candidate.unwrap().leased);
    }

    #[test]
    fn a_miss_says_where_else_the_turns_were_seen() {
        let w = world();
        pin_first_turn(&w, &args(&["-p", "--model", "opus"]), "/elsewhere");
        let a = args(&["-p"]);
        let c = conv();
        let q = Query {
            args: &a,
            conv: &c,
            unrecognised: None,
            caps: &w.caps,
        };
        let found = lookup(&w.place, &q, Mode::Turn).unwrap();
        assert_eq!(
            found.candidate.unwrap_err(),
            PinMiss::NoPin {
                elsewhere: vec![
                    crate::identity::Difference::Cwd("/elsewhere".into()),
                    crate::identity::Difference::Flag("model".into()),
                ]
            }
        );
        let q = Query {
            unrecognised: Some("no role markers"),
            ..q
        };
        assert_eq!(
            lookup(&w.place, &q, Mode::Turn)
                .unwrap()
                .candidate
                .unwrap_err(),
            PinMiss::NotRecognised("no role markers".into())
        );
    }
}
