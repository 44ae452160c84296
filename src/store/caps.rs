//! Capability cache: what the real binary supports, keyed by its canonical
//! path, size and mtime so an upgrade is noticed without probing every run.
//! Beside a shared store, a turn also keeps them in its data dir
//! ([`LOCAL_FILE`]): the binary is this host's, and the file is read in
//! microseconds where the store costs a round trip.

pub use super::types::caps::BinaryKey;
pub use crate::probe::Capabilities;
use anyhow::Result;

/// The data dir's copy, for a turn beside a shared store.
pub const LOCAL_FILE: &str = "capabilities.json";
/// Binaries remembered in it (the most recent first).
const LOCAL_KEEP: usize = 8;

/// What the real binary supports, as probed before.
pub trait CapabilityCache {
    fn capabilities(&self, key: &BinaryKey) -> Result<Option<Capabilities>>;

    fn save_capabilities(&self, key: &BinaryKey, caps: &Capabilities) -> Result<()>;
}

#[derive(serde::Serialize, serde::Deserialize)]
struct LocalEntry {
    binary: BinaryKey,
    caps: Capabilities,
}

/// The copy in a turn's data dir, beside a shared store (see the module's
/// comment).
pub(crate) struct HostCopy(pub(crate) crate::data_dir::DataDir);

impl HostCopy {
    /// The data dir's copy (a file we cannot read or parse is no copy).
    fn entries(&self) -> Vec<LocalEntry> {
        let dir = &self.0;
        match dir.read(LOCAL_FILE) {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn get(&self, key: &BinaryKey) -> Option<Capabilities> {
        self.entries()
            .into_iter()
            .find(|e| e.binary == *key)
            .map(|e| e.caps)
    }

    pub(crate) fn keep(&self, key: &BinaryKey, caps: &Capabilities) {
        let dir = &self.0;
        let mut entries = self.entries();
        entries.retain(|e| e.binary.path != key.path);
        entries.insert(
            0,
            LocalEntry {
                binary: key.clone(),
                caps: caps.clone(),
            },
        );
        entries.truncate(LOCAL_KEEP);
        let written = serde_json::to_vec(&entries)
            .map_err(std::io::Error::other)
            .and_then(|json| crate::whole_file::write(&dir.join(LOCAL_FILE), &json, 0o600));
        if let Err(e) = written {
            crate::debug!("capabilities not kept in the data dir: {e}");
        }
    }
}
