//! A turn's way past the schema-version read (a round trip, the first and
//! slowest statement of a new backend): a process that found the shared
//! store's schema up to date leaves a marker for that store in the data
//! dir, and for [`FRESH_FOR`] the turns on this host trust it. A statement
//! that finds a table, column or function missing (the database dropped or
//! restored from an older copy) removes the marker: that turn runs as
//! without the store, and the next one reads the version and migrates.

use crate::data_dir::DataDir;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::error::SqlState;

/// How long a marker is trusted after it was written.
pub const FRESH_FOR: Duration = Duration::from_secs(60);

/// The marker of the store at `url` (its name a hash of the URL: no
/// password in a file name).
pub fn marker(dir: &DataDir, url: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(url.as_bytes());
    dir.join(format!("store-schema-{}", hex::encode(&digest[..8])))
}

/// Whether the marker says the schema has every one of the `steps` this
/// build knows (`migrations::COUNT`), and says it recently enough.
pub fn trusted(marker: &Path, steps: usize) -> bool {
    let Ok(Some(bytes)) = crate::data_dir::read_private(marker) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut fields = text.split_whitespace().map(str::parse::<i64>);
    let (Some(Ok(version)), Some(Ok(at))) = (fields.next(), fields.next()) else {
        return false;
    };
    let age = crate::store::clock::now() - at;
    version >= steps as i64 && (0..FRESH_FOR.as_secs() as i64).contains(&age)
}

/// The schema was just found (or made) up to date: it has all `steps`.
pub fn remember(marker: &Path, steps: usize) {
    let text = format!("{steps} {}\n", crate::store::clock::now());
    if let Err(e) = crate::whole_file::write(marker, text.as_bytes(), 0o600) {
        crate::debug!("store: no schema marker ({e})");
    }
}

pub fn forget(marker: &Path) {
    let _ = std::fs::remove_file(marker);
}

/// A statement failed on something the schema should have.
pub fn is_missing_object(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::UNDEFINED_TABLE
            || *c == SqlState::UNDEFINED_COLUMN
            || *c == SqlState::UNDEFINED_FUNCTION
            || *c == SqlState::INVALID_SCHEMA_NAME
            || *c == SqlState::UNDEFINED_OBJECT
    )
}

#[cfg(test)]
mod tests {
    use super::super::COUNT;
    use super::*;

    #[test]
    fn a_marker_is_trusted_while_fresh_and_complete() {
        let t = tempfile::tempdir().unwrap();
        let dir = DataDir::open_at(&t.path().join("d")).unwrap();
        let m = marker(&dir, "postgres://u:secret@h/db");
        assert!(!m.to_string_lossy().contains("secret"));
        assert_ne!(m, marker(&dir, "postgres://u:secret@h/other"));
        assert!(!trusted(&m, COUNT), "no marker yet");
        remember(&m, COUNT);
        assert!(trusted(&m, COUNT));
        let now = crate::store::clock::now();
        let write = |text: String| crate::whole_file::write(&m, text.as_bytes(), 0o600).unwrap();
        write(format!("{} {}", COUNT - 1, now));
        assert!(!trusted(&m, COUNT), "a schema short of this build's steps");
        write(format!("{} {}", COUNT, now - 61));
        assert!(!trusted(&m, COUNT), "stale");
        write(format!("{} {}", COUNT, now + 3600));
        assert!(!trusted(&m, COUNT), "from the future");
        write("garbage".into());
        assert!(!trusted(&m, COUNT));
        remember(&m, COUNT);
        forget(&m);
        assert!(!trusted(&m, COUNT));
    }
}
