//! The shim's store: capability cache, runs log, pins, leases — in the
//! embedded SQLite file by default, or in a PostgreSQL database a fleet of
//! replicas shares (`backend` says which). The engine is chosen once, when
//! the store opens ([`engine::Engine`]: `sqlite::Local` or
//! `postgres::Shared`); each topic (`pins`, `runs`, …) is a trait both
//! engines implement, its rows in `types`; a `Store` derefs to its engine.
//! Every failure here is reported to the caller of
//! these functions, who logs it and carries on without the store (the turn
//! runs as without the shim).

pub mod attempts;
pub mod backend;
pub mod caps;
pub mod clock;
pub mod engine;
pub mod listing;
mod migrations;
pub mod pins;
pub mod postgres;
pub mod prompts;
pub mod report;
pub mod runs;
pub mod scans;
pub mod sqlite;
pub mod totals;
pub mod transcripts;
pub mod types;

pub use clock::{now, Clock};

use crate::data_dir::DataDir;
use anyhow::{Context, Result};
use engine::Engine;
use std::path::{Path, PathBuf};

pub use sqlite::DB_FILE;

pub struct Store {
    engine: Box<dyn Engine>,
    /// The database file, or the shared store's URL without its password.
    pub path: PathBuf,
}

/// A store is its engine: `store.find_pins(…)`.
impl std::ops::Deref for Store {
    type Target = dyn Engine;
    fn deref(&self) -> &(dyn Engine + 'static) {
        &*self.engine
    }
}

impl std::ops::DerefMut for Store {
    fn deref_mut(&mut self) -> &mut (dyn Engine + 'static) {
        &mut *self.engine
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
        Ok(Self::on(path.clone(), sqlite::Local::open(path, hot)?))
    }

    fn on(path: PathBuf, engine: impl Engine + 'static) -> Store {
        Store {
            engine: Box::new(engine),
            path,
        }
    }

    /// An in-memory store for unit tests.
    pub fn in_memory() -> Result<Store> {
        Ok(Self::on(":memory:".into(), sqlite::Local::in_memory()?))
    }

    /// An existing SQLite database, read-only: never created, migrated or
    /// permission-checked, so `doctor` can look at one the shim would refuse.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Ok(Self::on(
            path.to_path_buf(),
            sqlite::Local::open_read_only(path)?,
        ))
    }

    /// The configured store, for a turn: the SQLite file in the data dir
    /// (lock waits bounded for the whole process), or the shared store
    /// (every call together bounded by [`postgres::TURN_BUDGET`]).
    /// `readied`: a connection to the shared store made ready ahead (the
    /// keeper's, a layer up), if one is.
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
                let pg = match adopted {
                    Some(pg) => pg,
                    None => Self::connect(&url, postgres::Patience::Turn, marked())?,
                };
                Ok(Self::on_shared(&url, pg, Some(dir)))
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
        let pg = Self::connect(url, patience, postgres::Schema::Migrate)?;
        Ok(Self::on_shared(url, pg, None))
    }

    /// The shared store at `url`, its schema left as it is (`doctor`).
    pub fn open_shared_as_is(url: &str, patience: postgres::Patience) -> Result<Store> {
        let pg = Self::connect(url, patience, postgres::Schema::AsIs)?;
        Ok(Self::on_shared(url, pg, None))
    }

    fn connect(
        url: &str,
        patience: postgres::Patience,
        schema: postgres::Schema,
    ) -> Result<postgres::Pg> {
        postgres::Pg::connect(url, patience, schema)
            .with_context(|| format!("opening the shared store {}", backend::redact(url)))
    }

    /// `local`: a turn's data dir, where it keeps what only this host
    /// knows (see `caps`), saving a round trip.
    fn on_shared(url: &str, pg: postgres::Pg, local: Option<DataDir>) -> Store {
        Self::on(
            PathBuf::from(backend::redact(url)),
            postgres::Shared::new(pg, local),
        )
    }

    /// What a turn writes to the SQLite store in `dir`, tried and left as
    /// it was (`doctor`; see `sqlite::trial`).
    pub fn trial(dir: &DataDir) -> Result<()> {
        sqlite::trial(dir)
    }

    /// The same store, with `clock` telling the time (tests age rows this
    /// way instead of rewriting them).
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Store {
        self.engine.set_clock(std::sync::Arc::new(clock));
        self
    }
}
