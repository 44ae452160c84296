//! The shim's store: capability cache, runs log, pins, leases — in the
//! embedded SQLite file by default, or in a PostgreSQL database a fleet of
//! replicas shares (`backend`, `postgres`). Callers see one interface, the
//! methods of [`Store`]; each dispatches to the shared backend when there
//! is one. Each topic's file (`pins`, `runs`, …) adds its methods and
//! re-exports its rows from `types`, which both backends use. Every
//! failure here is reported to the caller of these functions, who logs it
//! and carries on without the store (the turn runs as without the shim).

pub mod attempts;
pub mod backend;
pub mod caps;
mod clock;
pub mod listing;
mod migrations;
pub mod pins;
pub mod postgres;
pub mod prompts;
pub mod report;
pub mod runs;
pub mod scans;
pub mod transcripts;
mod trial;
pub mod types;

pub use clock::{now, Clock};

use crate::data_dir::DataDir;
use anyhow::{bail, Context, Result};
use rusqlite::Connection;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often a turn on a shared store does each housekeeping task.
pub const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(60);

pub const DB_FILE: &str = "shim.db";
/// Management commands wait this long for another process's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// A turn waits at most this long in all for other processes' locks, then
/// goes on without the store (see `hot_path_busy`).
const HOT_PATH_BUDGET: Duration = Duration::from_millis(1500);

pub struct Store {
    /// The SQLite connection (derefs to `rusqlite::Connection`); empty
    /// when the store is shared.
    pub conn: Sqlite,
    /// The database file, or the shared store's URL without its password.
    pub path: PathBuf,
    clock: Clock,
    /// The shared backend, when there is one: every method goes there.
    shared: Option<Box<std::cell::RefCell<postgres::Pg>>>,
    /// A turn's data dir, beside a shared store: where it keeps what only
    /// this host knows (see `caps`), saving a round trip.
    local: Option<DataDir>,
}

/// The SQLite connection of a local store. Tests and benchmarks reach it as
/// `store.conn`; a shared store has none, and every method of [`Store`]
/// goes to the shared backend before it could be reached.
pub struct Sqlite(Option<Connection>);

impl std::ops::Deref for Sqlite {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match &self.0 {
            Some(c) => c,
            None => unreachable!("a shared store has no SQLite connection"),
        }
    }
}

impl std::ops::DerefMut for Sqlite {
    fn deref_mut(&mut self) -> &mut Connection {
        match &mut self.0 {
            Some(c) => c,
            None => unreachable!("a shared store has no SQLite connection"),
        }
    }
}

impl Store {
    /// Open (creating if needed) `<dir>/shim.db`: dir 0700, file 0600, WAL,
    /// busy timeout, migrations applied.
    pub fn open_in(dir: &Path) -> Result<Store> {
        Self::open_at(&DataDir::open_at(dir)?, false)
    }

    fn open_at(dir: &DataDir, hot: bool) -> Result<Store> {
        let path = dir.join(DB_FILE);
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

    /// An in-memory store for unit tests.
    pub fn in_memory() -> Result<Store> {
        Self::setup(
            Connection::open_in_memory()?,
            PathBuf::from(":memory:"),
            false,
        )
    }

    /// The configured store, for a turn: the SQLite file in the data dir
    /// (lock waits bounded by [`HOT_PATH_BUDGET`] for the whole process),
    /// or the shared store (every call together bounded by
    /// [`postgres::TURN_BUDGET`]). `readied`: a connection to the shared
    /// store made ready ahead (the keeper's, a layer up), if one is.
    pub fn open_default(
        readied: impl FnOnce(&DataDir, &str) -> Option<postgres::handoff::Handed>,
    ) -> Result<Store> {
        let dir = DataDir::open()?;
        match backend::Location::configured(&dir)? {
            backend::Location::Sqlite => Self::open_at(&dir, true),
            backend::Location::Postgres(url) => {
                // What only this host knows (the binary's capabilities, the
                // schema seen up to date) is kept in the data dir too.
                let marked = || postgres::Schema::Marked(postgres::schema::marker(&dir, &url));
                let readied = readied(&dir, &url);
                let adopted = readied.and_then(|r| {
                    postgres::Pg::adopt(&url, r, marked())
                        .map_err(|e| crate::debug!("store: the readied connection failed ({e:#})"))
                        .ok()
                });
                let mut store = match adopted {
                    Some(pg) => Self::on_shared(&url, pg),
                    None => Self::connect_shared(&url, postgres::Patience::Turn, marked())?,
                };
                store.local = Some(dir);
                Ok(store)
            }
        }
    }

    /// The configured store for management commands and the keeper: the
    /// shared one, or the SQLite file in `dir`.
    pub fn open_configured(dir: &DataDir, patience: postgres::Patience) -> Result<Store> {
        match backend::Location::configured(dir)? {
            backend::Location::Sqlite => Self::open_at(dir, false),
            backend::Location::Postgres(url) => Self::open_shared(&url, patience),
        }
    }

    /// The shared store at `url` (connected, schema up to date).
    pub fn open_shared(url: &str, patience: postgres::Patience) -> Result<Store> {
        Self::connect_shared(url, patience, postgres::Schema::Migrate)
    }

    /// The shared store at `url`, its schema left as it is (`doctor`).
    pub fn open_shared_as_is(url: &str, patience: postgres::Patience) -> Result<Store> {
        Self::connect_shared(url, patience, postgres::Schema::AsIs)
    }

    fn connect_shared(
        url: &str,
        patience: postgres::Patience,
        schema: postgres::Schema,
    ) -> Result<Store> {
        let pg = postgres::Pg::connect(url, patience, schema)
            .with_context(|| format!("opening the shared store {}", backend::redact(url)))?;
        Ok(Self::on_shared(url, pg))
    }

    fn on_shared(url: &str, pg: postgres::Pg) -> Store {
        Store {
            conn: Sqlite(None),
            path: PathBuf::from(backend::redact(url)),
            clock: std::sync::Arc::new(now),
            shared: Some(Box::new(std::cell::RefCell::new(pg))),
            local: None,
        }
    }

    /// Whether replicas share this store (session files then travel
    /// through it, and the Claude config dir is not part of a scope).
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Whether a turn should do housekeeping `what` (dropping old attempts,
    /// sweeping ephemeral sessions) now. Always on a local file, where it
    /// costs microseconds; on a shared store, where each is a round trip,
    /// once per [`HOUSEKEEPING_EVERY`] per host (a marker in the data dir;
    /// `gc` sweeps the rest).
    pub fn housekeeping_due(&self, what: &str) -> bool {
        if !self.is_shared() {
            return true;
        }
        let Ok(dir) = DataDir::open() else {
            return true;
        };
        let marker = dir.join(format!("housekeeping-{what}"));
        let recent = std::fs::symlink_metadata(&marker)
            .ok()
            .filter(|m| m.file_type().is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age < HOUSEKEEPING_EVERY);
        if recent {
            return false;
        }
        let _ = crate::whole_file::write(&marker, b"", 0o600);
        true
    }

    /// Send what the shared store has queued (see `postgres::Queued`) now;
    /// a local store has nothing queued.
    pub fn flush(&self) {
        if let Some(mut pg) = self.pg() {
            pg.flush();
        }
    }

    /// Fold the WAL into the database file as far as no reader holds it
    /// back, without waiting for anyone (`PASSIVE`): the frames written
    /// since and the pages it copied. The keeper does it between turns, off
    /// the caller's path; a turn would otherwise meet SQLite's own
    /// checkpoint (and its fsyncs) every few turns, before its result
    /// reaches the caller. A shared store has no WAL of ours: nothing.
    pub fn checkpoint(&self) -> Result<Option<(i64, i64)>> {
        if self.is_shared() {
            return Ok(None);
        }
        let (log, done) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })?;
        Ok(Some((log, done)))
    }

    /// The shared backend, if this store is one.
    fn pg(&self) -> Option<std::cell::RefMut<'_, postgres::Pg>> {
        self.shared.as_ref().map(|p| p.borrow_mut())
    }

    /// The same store, with `clock` telling the time (tests age rows this
    /// way instead of rewriting them).
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Store {
        self.clock = std::sync::Arc::new(clock);
        self
    }

    /// Now, in epoch seconds, by this store's clock.
    pub fn now(&self) -> i64 {
        (self.clock)()
    }

    fn setup(conn: Connection, path: PathBuf, hot: bool) -> Result<Store> {
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
        Ok(Store {
            conn: Sqlite(Some(conn)),
            path,
            clock: std::sync::Arc::new(now),
            shared: None,
            local: None,
        })
    }

    pub fn schema_version(&self) -> Result<i64> {
        if let Some(mut pg) = self.pg() {
            return pg.schema_version();
        }
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
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

#[cfg(test)]
mod tests {
    use super::*;
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
            .conn
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
