//! The keeper's readied store connections (see `store::postgres::handoff`):
//! at most one per store URL, readied on a thread of its own (the keeper's
//! loop never waits for the server), handed to the first turn that asks, and
//! readied again for the next. One is dropped once it is past
//! [`OFFERED_FOR`] or the server has ended it.

use crate::store::postgres::handoff::{self, Ready, OFFERED_FOR};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default, Clone)]
pub struct StorePool(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    ready: HashMap<String, Ready>,
    readying: HashSet<String>,
}

impl StorePool {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection readied for `url`, if one is and it is still fresh;
    /// the next is readied either way.
    pub fn take(&self, url: &str) -> Option<Ready> {
        let taken = self.inner().ready.remove(url).filter(Ready::fresh);
        self.refill(url);
        taken
    }

    /// Ready a connection for `url` unless one is, or is being readied.
    pub fn refill(&self, url: &str) {
        {
            let mut inner = self.inner();
            if inner.ready.contains_key(url) || !inner.readying.insert(url.to_owned()) {
                return;
            }
        }
        let pool = self.clone();
        let asked = url;
        let url = url.to_owned();
        let spawned = std::thread::Builder::new()
            .name("store-ready".into())
            .spawn(move || {
                let made = handoff::ready(&url);
                let mut inner = pool.inner();
                inner.readying.remove(&url);
                match made {
                    Ok(r) => {
                        crate::debug!(
                            "keeper: store connection readied for {}",
                            crate::store::backend::redact(&url)
                        );
                        inner.ready.insert(url, r);
                    }
                    Err(e) => crate::debug!(
                        "keeper: no store connection readied for {} ({e:#})",
                        crate::store::backend::redact(&url)
                    ),
                }
            });
        if spawned.is_err() {
            self.inner().readying.remove(asked);
        }
    }

    /// Drop what is past its time.
    pub fn expire(&self) {
        self.inner()
            .ready
            .retain(|_, r| r.made.elapsed() < OFFERED_FOR);
    }
}
