//! The shared engine: the topics' traits over a PostgreSQL connection
//! ([`Pg`], whose statements live in this module's topic files). It tells
//! the time by the store's clock, and beside a turn keeps what only this
//! host knows in its data dir (`caps::HostCopy`).

use super::conn::Pg;
use crate::cache_miss::Previous;
use crate::data_dir::DataDir;
use crate::identity::{Chain, Node, Scope};
use crate::sessions::scan::Scan;
use crate::store::attempts::{AttemptRow, Attempts, Outcome};
use crate::store::caps::{BinaryKey, Capabilities, CapabilityCache, HostCopy};
use crate::store::clock::{now, Clock};
use crate::store::engine::Engine;
use crate::store::listing::{Listing, ShimSession};
use crate::store::pins::{Elsewhere, Lease, NewPin, Ownership, Pin, Pins};
use crate::store::prompts::{Kept, Prompted, Prompts, CANDIDATES, HEAD, MAX_PROMPT};
use crate::store::report::{Health, LogRow, PinRow, Removed, Report, RunRow};
use crate::store::runs::{Run, Runs};
use crate::store::scans::Scans;
use crate::store::sqlite::LocalTime;
use crate::store::totals::{Total, Totals};
use crate::store::transcripts::{Chunk, Fleet};
use anyhow::Result;
use std::cell::{RefCell, RefMut};
use std::path::Path;
use std::time::Duration;

/// How often a turn does each housekeeping task: each is a round trip.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(60);

/// A store in a PostgreSQL database that the replicas of a fleet share.
pub struct Shared {
    pg: RefCell<Pg>,
    clock: Clock,
    /// A turn's copy of the capabilities, in its data dir.
    host: Option<HostCopy>,
    /// Whose running totals this process adds to and reads: the host and
    /// its data dir (two replicas may share a host).
    replica: String,
}

impl Shared {
    pub fn new(pg: Pg, local: Option<DataDir>) -> Shared {
        // The data dir as configured, whether or not this process uses it
        // (a turn does; `metrics` does not): both name one replica.
        let dir = crate::data_dir::configured()
            .or_else(|| local.as_ref().map(|d| d.path().to_path_buf()))
            .unwrap_or_default();
        let replica = format!(
            "{}:{}",
            pg.host,
            crate::cache_miss::part([dir.as_os_str().as_encoded_bytes()])
        );
        Shared {
            pg: RefCell::new(pg),
            clock: std::sync::Arc::new(now),
            host: local.map(HostCopy),
            replica,
        }
    }

    fn pg(&self) -> RefMut<'_, Pg> {
        self.pg.borrow_mut()
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }
}

impl Engine for Shared {
    fn now(&self) -> i64 {
        Shared::now(self)
    }

    fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    fn schema_version(&self) -> Result<i64> {
        self.pg().schema_version()
    }

    fn fleet(&self) -> Option<&dyn Fleet> {
        Some(self)
    }

    fn file(&self) -> Option<&Path> {
        None
    }

    /// Each task is a round trip here: once per [`HOUSEKEEPING_EVERY`] per
    /// host (a marker in the data dir; `gc` sweeps the rest).
    fn housekeeping_due(&self, what: &str) -> bool {
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

    fn flush(&self) {
        self.pg().flush();
    }

    /// The server keeps its own log: nothing of ours to fold.
    fn checkpoint(&self) -> Result<Option<(i64, i64)>> {
        Ok(None)
    }

    fn sqlite(&self) -> Option<&rusqlite::Connection> {
        None
    }
}

impl Pins for Shared {
    fn find_pins(&self, node: &Node) -> Result<Vec<Pin>> {
        self.pg().find_pins(node)
    }

    fn find_elsewhere(&self, chain: &Chain) -> Result<Option<Elsewhere>> {
        self.pg().find_elsewhere(chain)
    }

    fn add_pin(&mut self, pin: &NewPin, ownership: Ownership, config_dir: &str) -> Result<i64> {
        let now = self.now();
        self.pg().add_pin(pin, ownership, config_dir, now)
    }

    fn unpin(&mut self, id: i64, session: &str, head: Option<&str>) -> Result<()> {
        self.pg().unpin(id, session, head)
    }

    fn drop_session(&self, session: &str) -> Result<()> {
        self.pg().drop_session(session)
    }

    fn session_head(&self, session: &str) -> Result<Option<String>> {
        self.pg().session_head(session)
    }

    fn try_lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        _pid: i32,
        _alive: &dyn Fn(i32) -> bool,
    ) -> Result<Lease> {
        let now = self.now();
        // Shared: the holder is this process's connection (`pid` and
        // `alive` are this host's notions).
        self.pg().try_lease(session, head, now)
    }

    fn mark_draining(&self, session: &str, _pid: i32) -> Result<()> {
        self.pg().mark_draining(session)
    }

    fn release_lease(&self, session: &str, _pid: i32) -> Result<()> {
        self.pg().release_lease(session)
    }

    fn touch_session(&self, session: &str) -> Result<()> {
        self.pg().touch_session(session, self.now())
    }

    fn expired_ephemeral(
        &self,
        idle_before: i64,
        _alive: &dyn Fn(i32) -> bool,
    ) -> Result<Vec<(String, String)>> {
        self.pg().expired_ephemeral(idle_before)
    }

    fn is_ephemeral(&self, session: &str) -> Result<bool> {
        self.pg().is_ephemeral(session)
    }
}
impl Prompts for Shared {
    fn keep_prompt(&mut self, pin: i64, scope: &Scope, kept: &Kept<'_>) -> Result<()> {
        if kept.prompt.len() > MAX_PROMPT {
            return Ok(());
        }
        let replies = serde_json::to_string(kept.replies)?;
        self.pg()
            .keep_prompt(pin, scope, kept.prompt, &replies, kept.continues)
    }

    fn prompted(&self, scope: &Scope) -> Result<Vec<Prompted>> {
        self.pg().prompted(scope, CANDIDATES)
    }

    fn kept_prompt_head(&self, pin: Option<i64>, node: &Node) -> Result<Option<String>> {
        self.pg().kept_prompt_head(pin, node.as_str(), HEAD)
    }

    fn prompt_of(&self, pin: i64) -> Result<Option<String>> {
        self.pg().prompt_of(pin)
    }
}
impl Runs for Shared {
    fn log_run(&self, run: &Run<'_>) -> Result<()> {
        self.pg().log_run(run, self.now(), &self.replica)
    }

    fn begin_run(&self, run: &Run<'_>) -> Result<i64> {
        self.pg().begin_run(run, self.now())
    }

    fn end_run(&self, id: i64, run: &Run<'_>) -> Result<()> {
        self.pg().end_run(id, run, self.now(), &self.replica)
    }

    fn run_counts(&self) -> Result<Vec<(String, i64)>> {
        self.pg().run_counts()
    }
}
impl Totals for Shared {
    fn totals(&self) -> Result<Vec<Total>> {
        self.pg().totals(&self.replica)
    }

    fn previous_run(&self, session: &str, except: Option<i64>) -> Result<Option<Previous>> {
        self.pg().previous_run(session, except)
    }

    fn cli_versions(&self) -> Result<Vec<String>> {
        self.pg().cli_versions()
    }
}

impl Attempts for Shared {
    fn start_attempt(
        &self,
        node: &Node,
        message: &str,
        session: &str,
        pid: i32,
        continues: i64,
    ) -> Result<i64> {
        self.pg()
            .start_attempt(node, message, session, pid, continues, self.now())
    }

    fn end_attempt(&self, id: i64, outcome: Outcome) -> Result<()> {
        self.pg().end_attempt(id, outcome, self.now())
    }

    fn last_attempt(&self, node: &Node, message: &str, since: i64) -> Result<Option<AttemptRow>> {
        self.pg().last_attempt(node, message, since)
    }

    fn prune_attempts(&self, before: i64) -> Result<usize> {
        self.pg().prune_attempts(before)
    }
}
impl Scans for Shared {
    fn scan_of(&self, path: &Path) -> Result<Option<Scan>> {
        let mut pg = self.pg();
        let json = pg.scan_of(&path.to_string_lossy())?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    fn save_scan(&self, path: &Path, scan: &Scan) -> Result<()> {
        let mut pg = self.pg();
        let json = serde_json::to_string(scan)?;
        pg.save_scan(&path.to_string_lossy(), &json, self.now())
    }
}
impl CapabilityCache for Shared {
    fn capabilities(&self, key: &BinaryKey) -> Result<Option<Capabilities>> {
        if let Some(c) = self.host.as_ref().and_then(|h| h.get(key)) {
            return Ok(Some(c));
        }
        let stored = self.pg().capabilities(key)?;
        if let (Some(host), Some(c)) = (&self.host, &stored) {
            host.keep(key, c);
        }
        Ok(stored)
    }

    fn save_capabilities(&self, key: &BinaryKey, caps: &Capabilities) -> Result<()> {
        self.pg().save_capabilities(key, caps, now())?;
        if let Some(host) = &self.host {
            host.keep(key, caps);
        }
        Ok(())
    }
}
impl Report for Shared {
    fn runs_since(&self, since: i64, cwd: Option<&str>) -> Result<Vec<RunRow>> {
        self.pg().runs_since(since, cwd)
    }

    fn recent_runs(
        &self,
        since: i64,
        cwd: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<LogRow>> {
        self.pg().recent_runs(since, cwd, limit)
    }

    fn local_day(&self, at: i64) -> Result<String> {
        LocalTime::new()?.format("%Y-%m-%d", at)
    }

    fn count_pinned(&self) -> Result<i64> {
        self.pg().count_pinned()
    }

    fn latest_pins(&self, cwd: Option<&str>) -> Result<Vec<PinRow>> {
        self.pg().latest_pins(cwd)
    }

    fn pinned_sessions(&self) -> Result<Vec<String>> {
        self.pg().pinned_sessions()
    }

    fn forget_sessions(&mut self, sessions: &[String]) -> Result<Removed> {
        self.pg().forget_sessions(sessions)
    }

    fn forget_cwd(&mut self, cwd: &str) -> Result<Removed> {
        self.pg().forget_cwd(cwd)
    }

    fn forget_all(&mut self) -> Result<Removed> {
        self.pg().forget_all()
    }

    fn count_prunable(
        &self,
        gone: &[String],
        pins_before: i64,
        runs_before: i64,
    ) -> Result<Removed> {
        self.pg().count_prunable(gone, pins_before, runs_before)
    }

    fn prune(&mut self, gone: &[String], pins_before: i64, runs_before: i64) -> Result<Removed> {
        self.pg().prune(gone, pins_before, runs_before)
    }

    fn vacuum(&self) -> Result<()> {
        self.pg().vacuum()
    }

    fn health(&self) -> Result<Health> {
        self.pg().health()
    }
}
impl Listing for Shared {
    fn shim_sessions(&self) -> Result<Vec<ShimSession>> {
        self.pg().shim_sessions()
    }
}
impl Fleet for Shared {
    fn transcript_manifest(&self, session: &str) -> Result<Vec<Chunk>> {
        self.pg().transcript_manifest(session)
    }

    fn transcript_from(&self, session: &str, from: u64) -> Result<Vec<(Chunk, Vec<u8>)>> {
        self.pg().transcript_from(session, from)
    }

    fn append_transcript(&self, session: &str, start: u64, data: &[u8]) -> Result<()> {
        let now = self.now();
        self.pg().append_transcript(session, start, data, now)
    }

    fn head_and_lease(
        &self,
        session: &str,
        head: Option<&str>,
    ) -> Result<(Option<String>, Option<Lease>)> {
        let now = self.now();
        self.pg().head_and_lease(session, head, now)
    }

    fn want_scan(&self, path: &Path) {
        self.pg().want_scan(&path.to_string_lossy());
    }
}
