//! The shim's database as tests see it: a factory that seeds pins and runs
//! at any time (the store's injectable clock, no raw SQL), and read-only
//! views of its tables for assertions.

use std::path::{Path, PathBuf};

use claude_shim::store::pins::{NewPin, Ownership};
use claude_shim::store::runs::Run;
use claude_shim::store::Store;

use super::sandbox::Sandbox;

pub fn db_path(w: &Sandbox) -> PathBuf {
    w.shim_home.join("shim.db")
}

fn open(w: &Sandbox) -> Option<rusqlite::Connection> {
    open_at(&w.shim_home)
}

/// The store in `shim_home`, read-only, waiting out writers.
pub fn open_at(shim_home: &Path) -> Option<rusqlite::Connection> {
    let path = shim_home.join("shim.db");
    if !path.exists() {
        return None;
    }
    let db =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    db.busy_timeout(std::time::Duration::from_secs(30)).ok()?;
    Some(db)
}

/// One row of the shim's `runs` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRow {
    pub kind: String,
    pub session: Option<String>,
    pub cwd: String,
    /// The exit code, or −signal.
    pub exit: i64,
    /// Why it ran as it did ('' when not recorded).
    pub why_code: String,
    /// `cold` or `warm` ('' when not recorded).
    pub engine: String,
    /// The reason's sentence ('' when not recorded).
    pub why: String,
}

/// The `runs` table of the store in `shim_home`, oldest first (empty when
/// there is no store yet).
pub fn run_rows(shim_home: &Path) -> Vec<RunRow> {
    let Some(db) = open_at(shim_home) else {
        return Vec::new();
    };
    let mut stmt = db
        .prepare(
            "SELECT kind, session, cwd, exit, COALESCE(why_code, ''), COALESCE(engine, ''),
                    COALESCE(why, '')
             FROM runs ORDER BY id",
        )
        .expect("runs");
    let rows = stmt
        .query_map([], |r| {
            Ok(RunRow {
                kind: r.get(0)?,
                session: r.get(1)?,
                cwd: r.get(2)?,
                exit: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                why_code: r.get(4)?,
                engine: r.get(5)?,
                why: r.get(6)?,
            })
        })
        .expect("runs");
    rows.collect::<Result<_, _>>().expect("runs rows")
}

/// The sandbox's `runs` rows.
pub fn runs(w: &Sandbox) -> Vec<RunRow> {
    run_rows(&w.shim_home)
}

pub fn kinds(w: &Sandbox) -> Vec<String> {
    runs(w).into_iter().map(|r| r.kind).collect()
}

/// `pins` rows: (session, assistant_uuid, turns).
pub fn pins(w: &Sandbox) -> Vec<(String, Option<String>, i64)> {
    let Some(db) = open(w) else { return Vec::new() };
    let mut stmt = db
        .prepare("SELECT session, assistant_uuid, turns FROM pins ORDER BY id")
        .expect("pins");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("pins");
    rows.collect::<Result<_, _>>().expect("pins rows")
}

/// `sessions` rows: (session, head_uuid, lease_pid).
pub fn heads(w: &Sandbox) -> Vec<(String, Option<String>, Option<i64>)> {
    let Some(db) = open(w) else { return Vec::new() };
    let mut stmt = db
        .prepare("SELECT session, head_uuid, lease_pid FROM sessions ORDER BY session")
        .expect("sessions");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("sessions");
    rows.collect::<Result<_, _>>().expect("sessions rows")
}

pub fn errors_log(w: &Sandbox) -> String {
    std::fs::read_to_string(w.shim_home.join("errors.log")).unwrap_or_default()
}

// ---- seeding, at any time --------------------------------------------------------------

pub const DAY: i64 = 86_400;

/// The sandbox's store (created if need be) with its clock `days_ago` days back.
pub fn store_at(sb: &Sandbox, days_ago: i64) -> Store {
    let at = claude_shim::store::now() - days_ago * DAY;
    sb.store().with_clock(move || at)
}

/// A pin of `turns` user turns (`<session>/1`, `<session>/2`…) of `session`
/// in `cwd`, with no reply hashes, made `days_ago` days back.
pub fn seed_pin(
    sb: &Sandbox,
    session: &str,
    cwd: &str,
    turns: usize,
    preview: &str,
    days_ago: i64,
) {
    let names: Vec<String> = (1..=turns).map(|k| format!("{session}/{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut p = NewPin::of_turns(session, "a", cwd, &names, preview);
    p.reply_hashes.clear();
    store_at(sb, days_ago)
        .add_pin(&p, Ownership::Kept, "/c")
        .expect("seed a pin");
}

/// A `runs` row logged `days_ago` days back.
pub fn seed_run(sb: &Sandbox, run: &Run, days_ago: i64) {
    store_at(sb, days_ago).log_run(run).expect("seed a run");
}

/// One number from the database (`SELECT COUNT(*) …`).
pub fn count(sb: &Sandbox, sql: &str) -> i64 {
    sb.store()
        .sqlite()
        .expect("a SQLite store")
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}
