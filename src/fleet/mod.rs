//! A fleet: replicas on several hosts sharing one PostgreSQL store, a
//! conversation's turns landing on any of them. What changes from one
//! machine (see docs/fleet.md):
//!
//! - identity: a scope leaves out the Claude config dir, which differs per
//!   host ([`crate::identity::config_dir_in_scope`]);
//! - leases are the store's (advisory locks), so no two hosts resume one
//!   session in place at once;
//! - session files travel: a turn uploads what it added to its session's
//!   file ([`after_run`]), and a turn whose pinned session's file is missing
//!   or behind here brings it from the store first ([`bring_here`]).
//!
//! Every failure leaves the turn as it would be without the fleet: a file
//! that cannot be brought here means a fresh turn; a failed upload means
//! the next turn elsewhere runs fresh. Both say why in errors.log.

pub mod transcript;

use crate::store::transcripts::Fleet;
use crate::store::Store;
use crate::{debug, error};
use std::path::Path;
use transcript::{Expect, Hydrated, Uploaded};

/// Before lookup reads a pinned session's file: make this host's copy the
/// stored transcript. `leased`: this turn holds the session's in-place
/// lease, so the copy may be replaced and a live process of the session
/// here is ended first (its closing records would land after another
/// host's turn). `false`: the session must not be resumed from here.
/// `release` ends that live process (the caller's, a layer up).
pub fn bring_here(
    store: &dyn Fleet,
    here: (&Path, &str),
    session: &str,
    at: Option<&str>,
    leased: bool,
    release: impl FnOnce(),
) -> bool {
    let (config_dir, cwd) = here;
    let expect = match (at, leased) {
        (Some(uuid), true) => Expect::Head(uuid),
        (Some(uuid), false) => Expect::Contains(uuid),
        (None, _) => Expect::Nothing,
    };
    let hydrated = transcript::hydrate(store, config_dir, cwd, session, expect, leased, release);
    match hydrated {
        Ok(Hydrated::Here) | Ok(Hydrated::NotStored) => true,
        Ok(Hydrated::Written { bytes }) => {
            debug!("fleet: brought {bytes} bytes of {session} here");
            true
        }
        Ok(Hydrated::Refused(why)) => {
            error!("fleet: session {session} not brought here ({why}); the turn runs fresh");
            false
        }
        Err(e) => {
            error!("fleet: bringing session {session} here failed ({e:#}); the turn runs fresh");
            false
        }
    }
}

/// After a run that wrote `session` here: upload what it added, before the
/// turn lets go of the lease (the next turn, on any host, waits for that).
pub fn after_run(store: &Store, config_dir: &Path, session: &str) {
    let Some(store) = store.fleet() else { return };
    if session.is_empty() {
        return;
    }
    match transcript::upload(store, config_dir, session) {
        Ok(Uploaded::Bytes(n)) => debug!("fleet: uploaded {n} bytes of {session}"),
        Ok(Uploaded::Nothing) => {}
        Err(e) => error!(
            "fleet: uploading session {session} failed ({e:#}); its next turn on another host runs fresh"
        ),
    }
}
