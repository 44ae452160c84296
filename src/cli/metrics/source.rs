//! Where a scrape's figures come from: the store's running totals and the
//! keeper's status, read anew for each scrape.

use super::exposition::Snapshot;
use crate::store::Store;
use std::io::Write;
use std::os::unix::fs::MetadataExt;

/// The store, kept open across scrapes: opened again after a failure, or
/// when its file was replaced (deleted and started anew by a turn).
#[derive(Default)]
pub struct Source {
    store: Option<(Store, Option<(u64, u64)>)>,
    /// The last scrape failed to read the store (said once, not each time).
    failing: bool,
}

/// The database file's identity (device, inode); `None`: not a file.
fn identity(store: &Store) -> Option<(u64, u64)> {
    let m = std::fs::metadata(store.file()?).ok()?;
    Some((m.dev(), m.ino()))
}

impl Source {
    pub fn snapshot(&mut self) -> Snapshot {
        let dir = crate::data_dir::DataDir::existing().ok().flatten();
        let mut snap = Snapshot {
            keeper: dir
                .as_ref()
                .and_then(crate::warm::client::Keeper::status_of),
            ..Snapshot::default()
        };
        let replaced = self
            .store
            .as_ref()
            .is_some_and(|(s, id)| id.is_some() && identity(s) != *id);
        if replaced {
            self.store = None;
        }
        if self.store.is_none() {
            match crate::cli::store_access::existing_store() {
                Ok(Some(store)) => {
                    let id = identity(&store);
                    self.store = Some((store, id));
                }
                // No store yet (no turn ran): zeros.
                Ok(None) => {
                    snap.totals = Some(Vec::new());
                    self.recovered();
                    return snap;
                }
                Err(e) => {
                    self.failed(&format!("opening the store: {e:#}"));
                    return snap;
                }
            }
        }
        let Some((store, _)) = &self.store else {
            return snap;
        };
        match store.totals() {
            Ok(t) => {
                snap.totals = Some(t);
                snap.cli_versions = store.cli_versions().unwrap_or_default();
                self.recovered();
            }
            Err(e) => {
                self.store = None;
                self.failed(&format!("reading the store: {e:#}"));
            }
        }
        snap
    }

    /// Said once when the store starts failing (on stderr, which a service
    /// manager keeps, and in errors.log), not at every scrape.
    fn failed(&mut self, why: &str) {
        if !self.failing {
            crate::error!("metrics: {why}");
            let _ = writeln!(
                std::io::stderr(),
                "claude-shim metrics: {why} (claude_shim_store_up 0; `claude-shim doctor` says how to fix the store)"
            );
        }
        self.failing = true;
    }

    fn recovered(&mut self) {
        if std::mem::take(&mut self.failing) {
            let _ = writeln!(
                std::io::stderr(),
                "claude-shim metrics: the store reads again"
            );
        }
    }
}
