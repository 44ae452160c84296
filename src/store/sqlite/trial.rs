//! `doctor`'s trial of the store: what a turn does to it (open it for
//! writing, migrate, write a run's row), undone. A data directory on a
//! read-only or full file system reads fine, and every turn then runs as
//! without the shim; only a write finds that out.

use super::local::Local;
use super::local::DB_FILE;
use crate::data_dir::DataDir;
use crate::store::migrations;
use crate::store::runs::{Engine, Kind, Run, Runs as _, Spent};
use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the trial waits for a turn holding the write lock.
const PATIENCE: Duration = Duration::from_secs(2);

/// What a turn writes to the SQLite store in `dir`, tried and left as it
/// was. A store with content: opened for writing, migrated and given a
/// run's row in a transaction that is rolled back. None yet (or an empty
/// file a failed first turn left): the same first turn on a scratch
/// database beside it, removed after.
pub fn trial(dir: &DataDir) -> Result<()> {
    let db = dir.join(DB_FILE);
    match std::fs::metadata(&db) {
        Ok(m) if m.len() > 0 => in_place(&db),
        _ => scratch(dir),
    }
}

/// The row the trial writes (never committed in a real store).
fn row() -> Run<'static> {
    Run {
        cwd: "",
        kind: Kind::Unchanged,
        why_code: "doctor-trial",
        why: "claude-shim doctor tried a write",
        exit: 0,
        bytes_in: 0,
        bytes_sent: 0,
        spent: Spent::default(),
        session: None,
        conv_key: None,
        engine: Engine::Cold,
        replay_misses_prefix: false,
        cache_miss: None,
        prefix: None,
        timing: None,
        errors: 0,
        cold: None,
    }
}

fn in_place(db: &Path) -> Result<()> {
    // As a turn opens it first (it also creates it), which names the cause
    // plainly: "Read-only file system".
    std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(db)
        .with_context(|| format!("opening {} for writing", db.display()))?;
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    conn.busy_timeout(PATIENCE)?;
    // Closing must not fold the WAL into the file: the store stays as it was.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    let store = Local::on(conn, db.to_path_buf());
    store
        .conn
        .execute_batch("BEGIN IMMEDIATE")
        .context("taking the write lock")?;
    let tried = migrations::apply_within(&store.conn)
        .context("migrating")
        .and_then(|()| store.log_run(&row()).context("writing a run's row"));
    let undone = store.conn.execute_batch("ROLLBACK");
    tried?;
    undone.context("rolling the trial back")?;
    Ok(())
}

/// A scratch database and its WAL files, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

fn scratch(dir: &DataDir) -> Result<()> {
    let name = format!(".doctor-trial-{}.db", std::process::id());
    let path = dir.join(&name);
    dir.create_private(&name)
        .with_context(|| format!("creating a file in {}", dir.path().display()))?;
    let guard = Scratch(path.clone());
    let conn = Connection::open(&path)
        .with_context(|| format!("opening a database in {}", dir.path().display()))?;
    conn.busy_timeout(PATIENCE)?;
    let store = Local::setup(conn, path, false)?;
    store.log_run(&row()).context("writing a run's row")?;
    drop(store);
    drop(guard);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                // The shared-memory index changes for readers too.
                let bytes = match name.ends_with("-shm") {
                    true => Vec::new(),
                    false => std::fs::read(e.path()).unwrap(),
                };
                (name, bytes)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_trial_leaves_a_store_as_it_was() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open_in(t.path()).unwrap();
        store.log_run(&row()).unwrap();
        drop(store);
        let dir = DataDir::open_at(t.path()).unwrap();
        let before = files(t.path());
        Store::trial(&dir).unwrap();
        assert_eq!(files(t.path()), before);
    }

    #[test]
    fn a_trial_without_a_store_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let dir = DataDir::open_at(t.path()).unwrap();
        Store::trial(&dir).unwrap();
        assert!(files(t.path()).is_empty(), "{:?}", files(t.path()));
    }

    #[test]
    fn a_trial_migrates_an_old_store_and_rolls_it_back() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join(DB_FILE);
        {
            let store = Store::open_in(t.path()).unwrap();
            store
                .sqlite()
                .unwrap()
                .pragma_update(None, "user_version", 8)
                .unwrap();
            store
                .sqlite()
                .unwrap()
                .execute_batch(
                    "DROP INDEX runs_session;
                     DROP TABLE metric_totals;
                     ALTER TABLE runs DROP COLUMN cache_miss;
                     ALTER TABLE runs DROP COLUMN prefix;
                     ALTER TABLE runs DROP COLUMN replay_misses_prefix;",
                )
                .unwrap();
        }
        let dir = DataDir::open_at(t.path()).unwrap();
        Store::trial(&dir).unwrap();
        let conn = Connection::open(&db).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 8, "the migration was rolled back");
    }
}
