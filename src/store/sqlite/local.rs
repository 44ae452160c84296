//! The embedded engine: the SQLite file `<data dir>/shim.db` (one machine,
//! the default). The file is private (0600 in a 0700 dir, never through a
//! link), in WAL mode; a turn's waits for other processes' locks are
//! bounded ([`HOT_PATH_BUDGET`]) so a wedged reader cannot hold it up.

use crate::store::clock::{now, Clock};
use crate::store::engine::Engine;
use crate::store::migrations;
use crate::store::transcripts::Fleet;
use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The database file in the data dir.
pub const DB_FILE: &str = "shim.db";
/// Management commands wait this long for another process's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// A turn waits at most this long in all for other processes' locks, then
/// goes on without the store (see `hot_path_busy`).
const HOT_PATH_BUDGET: Duration = Duration::from_millis(1500);

/// A store in a SQLite database.
pub struct Local {
    pub(super) conn: Connection,
    path: PathBuf,
    clock: Clock,
}

impl Local {
    /// Open (creating if needed) the file `path`: file 0600, WAL, lock
    /// waits bounded for a turn (`hot`) or patient for the others,
    /// migrations applied. The dir is the caller's to check.
    pub(crate) fn open(path: PathBuf, hot: bool) -> Result<Local> {
        // Create the file private in one step. One that SQLite creates (0644
        // under the usual umask) and that is chmod-ed afterwards looks shared
        // to a shim opening it in between, which then refuses the store.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        check_private_file(&path)?;
        let conn =
            Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;
        if hot {
            conn.busy_handler(Some(hot_path_busy))?;
        } else {
            conn.busy_timeout(BUSY_TIMEOUT)?;
        }
        Self::setup(conn, path, hot)
    }

    /// An in-memory database (unit tests).
    pub(crate) fn in_memory() -> Result<Local> {
        Self::setup(
            Connection::open_in_memory()?,
            PathBuf::from(":memory:"),
            false,
        )
    }

    /// An existing database, read-only: never created, migrated or
    /// permission-checked, so `doctor` can look at one the shim would refuse.
    pub(crate) fn open_read_only(path: &Path) -> Result<Local> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(2))?;
        Ok(Local::on(conn, path.to_path_buf()))
    }

    /// A connection the caller opened and set up (`doctor`'s trial).
    pub(super) fn on(conn: Connection, path: PathBuf) -> Local {
        Local {
            conn,
            path,
            clock: std::sync::Arc::new(now),
        }
    }

    pub(super) fn setup(conn: Connection, path: PathBuf, hot: bool) -> Result<Local> {
        // Several shims creating the database at once race to switch it to
        // WAL and to migrate it; SQLite answers a lock upgrade that could
        // deadlock with SQLITE_BUSY at once, without its busy handler.
        retry_busy(hot, || {
            conn.pragma_update(None, "journal_mode", "WAL")
                .context("switching to WAL")
        })?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Each run is a short-lived process: checkpointing (and fsyncing) the
        // WAL at every close would cost more than the turn's own writes.
        // SQLite still checkpoints as the WAL grows (wal_autocheckpoint).
        // …and keep the WAL short, so the next process rebuilds its index
        // from a few pages (it reads the whole WAL on open).
        conn.pragma_update(None, "wal_autocheckpoint", 128)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        retry_busy(hot, || migrations::apply(&conn).context("migrating"))?;
        Ok(Local::on(conn, path))
    }

    /// Now, in epoch seconds, by this store's clock.
    pub(super) fn now(&self) -> i64 {
        (self.clock)()
    }
}

impl Engine for Local {
    fn now(&self) -> i64 {
        Local::now(self)
    }

    fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    fn fleet(&self) -> Option<&dyn Fleet> {
        None
    }

    fn file(&self) -> Option<&Path> {
        Some(&self.path)
    }

    /// Always: on a local file each costs microseconds.
    fn housekeeping_due(&self, _what: &str) -> bool {
        true
    }

    /// Nothing is queued: each write went out when it was made.
    fn flush(&self) {}

    /// The keeper does it between turns, off the caller's path; a turn
    /// would otherwise meet SQLite's own checkpoint (and its fsyncs) every
    /// few turns, before its result reaches the caller.
    fn checkpoint(&self) -> Result<Option<(i64, i64)>> {
        let (log, done) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })?;
        Ok(Some((log, done)))
    }

    fn sqlite(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}

/// Microseconds this process has spent waiting for other processes' locks.
static WAITED_US: AtomicU64 = AtomicU64::new(0);

/// SQLite's busy handler on a turn's path. Another process holding the
/// database (a wedged `claude-shim gc`, a backup tool, a long `sqlite3`
/// session) must not hold the caller's turn up: wait with SQLite's own
/// back-off, but at most [`HOT_PATH_BUDGET`] over every statement of the
/// process together; past that each busy statement fails at once and the
/// turn goes on without the store. Contention between shims is short (each
/// transaction is a few small writes), well inside the budget.
fn hot_path_busy(attempt: i32) -> bool {
    const STEPS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
    let budget = HOT_PATH_BUDGET.as_micros() as u64;
    let waited = WAITED_US.load(Ordering::Relaxed);
    if waited >= budget {
        return false;
    }
    let step = STEPS_MS[(attempt.max(0) as usize).min(STEPS_MS.len() - 1)] * 1000;
    let start = std::time::Instant::now();
    std::thread::sleep(Duration::from_micros(step.min(budget - waited)));
    WAITED_US.fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
    true
}

/// Run `f` again while it fails with SQLITE_BUSY: within the turn's lock
/// budget on the hot path, else for up to [`BUSY_TIMEOUT`].
fn retry_busy<T>(hot: bool, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut attempt = 0;
    loop {
        match f() {
            Err(e) if is_busy(&e) => {
                let again = if hot {
                    hot_path_busy(attempt)
                } else {
                    std::thread::sleep(Duration::from_millis(10));
                    std::time::Instant::now() < deadline
                };
                if !again {
                    return Err(e);
                }
                attempt += 1;
            }
            r => return r,
        }
    }
}

fn is_busy(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rusqlite::Error>(),
            Some(rusqlite::Error::SqliteFailure(f, _))
                if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    })
}

fn check_private_file(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        bail!("{} is owned by another user", path.display());
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "{} is readable or writable by others (want 0600)",
            path.display()
        );
    }
    Ok(())
}

/// Size on disk: the database plus its write-ahead log.
pub fn size_on_disk(path: &Path) -> u64 {
    let wal = path.with_extension("db-wal");
    [path, wal.as_path()]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, DB_FILE};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_dir_and_file_and_migrates() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("data");
        let store = Store::open_in(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(
            std::fs::metadata(&store.path).unwrap().mode() & 0o777,
            0o600
        );
        assert_eq!(store.schema_version().unwrap(), migrations::COUNT as i64);
        drop(store);
        // Reopening is idempotent.
        assert!(Store::open_in(&dir).is_ok());
    }

    #[test]
    fn a_checkpoint_folds_the_wal_into_the_database_file() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open_in(t.path()).unwrap();
        store
            .sqlite()
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (7)")
            .unwrap();
        let (log, done) = store.checkpoint().unwrap().unwrap();
        assert!(log > 0 && done == log, "{log} frames, {done} copied");
        // The database file alone (no WAL beside it) holds the row now.
        let alone = t.path().join("alone.db");
        std::fs::copy(&store.path, &alone).unwrap();
        let conn = Connection::open(&alone).unwrap();
        let x: i64 = conn.query_row("SELECT x FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 7);
    }

    #[test]
    fn refuses_a_shared_dir_and_garbage() {
        let t = tempfile::tempdir().unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(Store::open_in(t.path()).is_err());
        let t = tempfile::tempdir().unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let db = t.path().join(DB_FILE);
        std::fs::write(&db, vec![0x42u8; 8192]).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Store::open_in(t.path()).is_err());
    }
}
