//! The engine that holds a store, chosen once when it opens (see
//! `Store::open_default`): the embedded SQLite file ([`super::sqlite`]) or a
//! PostgreSQL database that a fleet shares ([`super::postgres::Shared`]).
//! Each topic (`pins`, `runs`, …) is a trait both engines implement; an
//! [`Engine`] is all of them, and what a store does besides its rows.

use super::attempts::Attempts;
use super::caps::CapabilityCache;
use super::clock::Clock;
use super::listing::Listing;
use super::pins::Pins;
use super::prompts::Prompts;
use super::report::Report;
use super::runs::Runs;
use super::scans::Scans;
use super::totals::Totals;
use super::transcripts::Fleet;
use anyhow::Result;
use std::path::Path;

pub trait Engine:
    Pins + Prompts + Runs + Attempts + Scans + CapabilityCache + Report + Listing + Totals + Send
{
    /// Now, in epoch seconds, by this store's clock.
    fn now(&self) -> i64;

    /// Tell the time with `clock` (tests age rows this way instead of
    /// rewriting them).
    fn set_clock(&mut self, clock: Clock);

    fn schema_version(&self) -> Result<i64>;

    /// What only a store the replicas of a fleet share can do (transcripts,
    /// the lookup in one round trip); `None` on one machine.
    fn fleet(&self) -> Option<&dyn Fleet>;

    /// The database file, where the store is one (its size on disk means
    /// something).
    fn file(&self) -> Option<&Path>;

    /// Whether a turn should do housekeeping `what` (dropping old attempts,
    /// sweeping ephemeral sessions) now.
    fn housekeeping_due(&self, what: &str) -> bool;

    /// Send the writes a turn queued (see `postgres::Queued`) now.
    fn flush(&self);

    /// Fold the WAL into the database file as far as no reader holds it
    /// back, without waiting for anyone (`PASSIVE`): the frames written
    /// since and the pages it copied; `None` where there is no WAL of ours.
    fn checkpoint(&self) -> Result<Option<(i64, i64)>>;

    /// The SQLite connection, for tests and benchmarks that look at rows
    /// directly; `None` on a shared store.
    fn sqlite(&self) -> Option<&rusqlite::Connection>;
}
