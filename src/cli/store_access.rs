//! The shim's store as a management command reaches it: only when it
//! exists (commands that only read never create it), an error that names
//! it, and a `--cwd` as the store records it.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Where to go when the store cannot be read.
pub const STORE_FIX: &str = "`claude-shim doctor` says how to fix the store";

/// The shim's store could not be opened: a management command that needs it
/// names it, and `cli::main` adds where to go next.
#[derive(Debug)]
pub struct UnreadableStore(pub String);

impl std::fmt::Display for UnreadableStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read the shim's store {}", self.0)
    }
}

/// The store, if it exists: commands that only read never create it.
pub fn existing_store() -> Result<Option<crate::store::Store>> {
    use crate::store::backend::{redact, Location};
    let Some(dir) = crate::data_dir::DataDir::existing()? else {
        return Ok(None);
    };
    match Location::configured(&dir)? {
        Location::Postgres(url) => {
            let patience =
                crate::store::postgres::Patience::Each(std::time::Duration::from_secs(10));
            crate::store::Store::open_configured(&dir, patience)
                .map(Some)
                .context(UnreadableStore(redact(&url)))
        }
        Location::Sqlite => {
            let db = dir.join(crate::store::DB_FILE);
            if !db.exists() {
                return Ok(None);
            }
            // SQLite would read the pages a WAL left beside it as if the
            // file were whole: a file that is not a database is refused
            // first.
            if !sqlite_header(&db) {
                return Err(anyhow::anyhow!("the file is not a SQLite database"))
                    .context(UnreadableStore(db.display().to_string()));
            }
            crate::store::Store::open_in(dir.path())
                .map(Some)
                .context(UnreadableStore(db.display().to_string()))
        }
    }
}

/// The file is empty (a database not yet written) or starts with SQLite's
/// header; a file that cannot be read is left to SQLite to say so.
fn sqlite_header(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(16);
    let read = std::fs::File::open(path).and_then(|f| f.take(16).read_to_end(&mut head));
    read.is_err() || head.is_empty() || head == b"SQLite format 3\0"
}

/// A `--cwd` as the runs and pins record it: canonical (the shim
/// canonicalises the cwd of every turn), else absolute as given.
pub fn canonical_dir(dir: &Path) -> String {
    dir.canonicalize()
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| PathBuf::from(dir))
        .to_string_lossy()
        .into_owned()
}
