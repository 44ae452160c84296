//! Live CLIs that never answered. A wrapper that buffers its stdin, or a
//! release that does not speak stream-json, leaves a new live process silent:
//! the turn waits for it (`CLAUDE_SHIM_WARM_START_PATIENCE`, 20 s), then runs cold. Remembered here,
//! per binary and scope (cwd and flags), the turns after it go cold at once
//! for a while (`FOR`) instead of waiting again; `doctor` and `warm status`
//! show it, `warm stop` forgets it. Kept in the data directory
//! (`unresponsive/<key>.json`, private).

use crate::data_dir::DataDir;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long the turns of a binary and scope run cold after its live CLI
/// did not answer.
pub const FOR: std::time::Duration = std::time::Duration::from_secs(3600);

const DIR: &str = "unresponsive";

/// One live CLI that did not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silent {
    /// The real binary's path.
    pub binary: String,
    pub cwd: String,
    /// Seconds since the epoch.
    pub since: i64,
    pub why: String,
}

/// A binary (its path, size and mtime) in a scope (cwd and flags): the key.
pub fn key(binary: &str, cwd: &str, flags: &[String]) -> String {
    let mut h = Sha256::new();
    for part in std::iter::once(binary)
        .chain(std::iter::once(cwd))
        .chain(flags.iter().map(String::as_str))
    {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(&h.finalize()[..16])
}

/// Remember that `key`'s live CLI did not answer.
pub fn record(dir: &DataDir, key: &str, s: &Silent) -> std::io::Result<()> {
    let sub = dir.subdir(DIR)?;
    let bytes = serde_json::to_vec(s).map_err(std::io::Error::other)?;
    crate::whole_file::write(&sub.join(format!("{key}.json")), &bytes, 0o600)
}

/// Whether `key`'s turns run cold now (its live CLI did not answer lately).
pub fn active(dir: &DataDir, key: &str, now: i64) -> Option<Silent> {
    let path = dir.join(DIR).join(format!("{key}.json"));
    let bytes = crate::data_dir::read_private(&path).ok()??;
    let s: Silent = serde_json::from_slice(&bytes).ok()?;
    (now - s.since < FOR.as_secs() as i64).then_some(s)
}

/// Every binary and scope whose turns run cold now, newest first.
pub fn list(dir: &DataDir, now: i64) -> Vec<Silent> {
    let Ok(entries) = std::fs::read_dir(dir.join(DIR)) else {
        return Vec::new();
    };
    let mut out: Vec<Silent> = entries
        .flatten()
        .filter_map(|e| {
            let bytes = crate::data_dir::read_private(&e.path()).ok()??;
            serde_json::from_slice::<Silent>(&bytes).ok()
        })
        .filter(|s| now - s.since < FOR.as_secs() as i64)
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.since));
    out
}

/// Forget them all (`warm stop`): the next turn tries a live CLI again.
pub fn forget_all(dir: &DataDir) {
    let _ = std::fs::remove_dir_all(dir.join(DIR));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_for_a_while_per_binary_and_scope() {
        let t = tempfile::tempdir().unwrap();
        let d = DataDir::open_at(t.path()).unwrap();
        let k = key("/usr/bin/claude", "/w", &["-p".into()]);
        assert_ne!(k, key("/usr/bin/claude", "/other", &["-p".into()]));
        assert_ne!(k, key("/opt/claude", "/w", &["-p".into()]));
        let s = Silent {
            binary: "/usr/bin/claude".into(),
            cwd: "/w".into(),
            since: 1_000,
            why: "said nothing in 20 s".into(),
        };
        assert!(active(&d, &k, 1_000).is_none());
        record(&d, &k, &s).unwrap();
        assert_eq!(active(&d, &k, 1_010), Some(s.clone()));
        assert_eq!(list(&d, 1_010), [s]);
        assert!(
            active(&d, &k, 1_000 + FOR.as_secs() as i64).is_none(),
            "expired"
        );
        forget_all(&d);
        assert!(active(&d, &k, 1_010).is_none());
    }
}
