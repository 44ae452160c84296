//! The store's WAL folded into its file between turns, by the keeper: a
//! thread of its own, with its own connection, nudged each time a shim
//! hangs up (its turn's writes are done). Without it, every few turns one
//! met SQLite's automatic checkpoint (copying the WAL and two fsyncs, 10 to
//! 100 ms on a busy machine) while its result waited for the pin; with the
//! WAL folded after each turn, a turn's commits stay below that threshold.
//! A shim's own automatic checkpoint stays the fallback (no keeper, or one
//! that fell behind).

use crate::data_dir::DataDir;
use crate::store::backend::Location;
use crate::store::Store;
use std::sync::mpsc::{channel, Receiver, Sender};

/// Nudges the checkpoint thread; nothing without one (a shared store, no
/// store, the tests).
#[derive(Default)]
pub struct Checkpoints(Option<Sender<()>>);

impl Checkpoints {
    /// The thread for `dir`'s SQLite store (none for a shared store).
    pub fn start(dir: &DataDir) -> Checkpoints {
        if !matches!(Location::configured(dir), Ok(Location::Sqlite)) {
            return Checkpoints(None);
        }
        let Ok(store) = Store::open_in(dir.path()) else {
            return Checkpoints(None);
        };
        let (tx, rx) = channel();
        let spawned = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || fold(&store, &rx));
        Checkpoints(spawned.ok().map(|_| tx))
    }

    /// A channel's sending end in place of the thread (tests read the other).
    #[cfg(test)]
    pub fn to(tx: Sender<()>) -> Checkpoints {
        Checkpoints(Some(tx))
    }

    /// A turn's writes are done: fold the WAL soon.
    pub fn nudge(&self) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(());
        }
    }
}

/// One checkpoint per burst of nudges, until the keeper goes.
fn fold(store: &Store, nudges: &Receiver<()>) {
    while nudges.recv().is_ok() {
        while nudges.try_recv().is_ok() {}
        let start = std::time::Instant::now();
        match store.checkpoint() {
            Ok(Some((log, done))) => crate::debug!(
                "keeper: checkpoint {done} of {log} WAL frames ({} µs)",
                start.elapsed().as_micros()
            ),
            Ok(None) => {}
            Err(e) => crate::debug!("keeper: checkpoint failed: {e:#}"),
        }
    }
}
