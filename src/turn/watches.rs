//! The watches an Agent SDK turn's two processes report to (see
//! `turn::handshake`): each passes every event on to the turn's own watch.

use crate::runner::{Running, Watch};
use std::sync::{Arc, Mutex, OnceLock};

/// The turn's watch, passed to B; when B proves itself, A is silenced and
/// ended (it never had a message, so it never called the API).
pub(super) struct Tandem {
    pub(super) inner: Option<Arc<dyn Watch>>,
    pub(super) a: Arc<Mutex<Option<Running>>>,
}

impl Watch for Tandem {
    fn result(&self, obs: &crate::observe::Observation) {
        if let Some(w) = &self.inner {
            w.result(obs)
        }
    }

    fn sealed(&self, obs: &crate::observe::Observation) {
        if let Some(w) = &self.inner {
            w.sealed(obs)
        }
    }

    fn input_closed(&self) {
        if let Some(w) = &self.inner {
            w.input_closed()
        }
    }

    fn committed(&self) {
        let a = self.a.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(a) = a {
            a.mute();
            a.terminate();
            // Reaped off the output thread, which must go on at once.
            std::thread::spawn(move || {
                let _ = a.wait();
            });
        }
        if let Some(w) = &self.inner {
            w.committed()
        }
    }
}

/// A watch for A, whose turn is known only once the message came.
#[derive(Default)]
pub(super) struct LateWatch(OnceLock<Arc<dyn Watch>>);

impl LateWatch {
    pub(super) fn set(&self, w: Arc<dyn Watch>) {
        let _ = self.0.set(w);
    }
}

impl Watch for LateWatch {
    fn result(&self, obs: &crate::observe::Observation) {
        if let Some(w) = self.0.get() {
            w.result(obs)
        }
    }

    fn sealed(&self, obs: &crate::observe::Observation) {
        if let Some(w) = self.0.get() {
            w.sealed(obs)
        }
    }

    fn input_closed(&self) {
        if let Some(w) = self.0.get() {
            w.input_closed()
        }
    }

    fn committed(&self) {
        if let Some(w) = self.0.get() {
            w.committed()
        }
    }
}
