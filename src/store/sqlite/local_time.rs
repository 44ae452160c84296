//! This machine's local time, as SQLite says it (`strftime` with
//! `localtime`): the SQLite store's runs queries format times so, and the
//! shared store's rows and the reports get the same words from here.

use anyhow::Result;
use rusqlite::{params, Connection};

/// `at` (epoch seconds) in this machine's local time, formatted by SQLite's
/// `strftime` (`fmt`) — as the runs queries of the SQLite store say it. The
/// shared store's rows get their local times here, not from the server.
pub struct LocalTime(Connection);

impl LocalTime {
    pub fn new() -> Result<LocalTime> {
        Ok(LocalTime(Connection::open_in_memory()?))
    }

    pub fn format(&self, fmt: &str, at: i64) -> Result<String> {
        Ok(self
            .0
            .prepare_cached("SELECT strftime(?1, ?2, 'unixepoch', 'localtime')")?
            .query_row(params![fmt, at], |r| r.get(0))?)
    }
}
