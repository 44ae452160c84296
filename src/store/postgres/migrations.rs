//! The shared store's schema, append-only like the SQLite one: the
//! `schema_version` row counts the steps applied. Steps run in one
//! transaction under an advisory lock, so replicas starting together apply
//! each step once.

use super::conn::{call, call_tx, Pg, Typed};
use anyhow::Result;
use tokio_postgres::error::SqlState;

/// Serialises migrations across replicas ("claude-shim migrate").
const LOCK: i64 = 0x636c_6175_6465_6d67;

const MIGRATIONS: &[&str] = &[
    // 1: what the SQLite store holds after its 4 steps, plus where each
    // row came from (`host`), and session transcripts in chunks.
    "CREATE TABLE capabilities (
        path TEXT NOT NULL, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,
        version TEXT NOT NULL,
        resume BOOLEAN NOT NULL, fork_session BOOLEAN NOT NULL,
        session_id BOOLEAN NOT NULL, resume_session_at BOOLEAN NOT NULL,
        probed_at BIGINT NOT NULL,
        PRIMARY KEY (path, size, mtime_ns));
     CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, cwd TEXT NOT NULL,
        kind TEXT NOT NULL, exit INTEGER, bytes_in BIGINT NOT NULL, bytes_sent BIGINT NOT NULL,
        input_tokens BIGINT, cache_write_tokens BIGINT, cache_read_tokens BIGINT,
        output_tokens BIGINT, cost_usd DOUBLE PRECISION, session TEXT, note TEXT,
        why_code TEXT, why TEXT, total_cost_usd DOUBLE PRECISION, usage_from TEXT,
        conv_key TEXT, engine TEXT, host TEXT);
     CREATE INDEX runs_at ON runs(at);
     CREATE TABLE pins (
        id BIGSERIAL PRIMARY KEY,
        scope TEXT NOT NULL, node TEXT NOT NULL, chain TEXT, parts TEXT, conv_key TEXT,
        session TEXT NOT NULL, assistant_uuid TEXT, reply_hashes TEXT NOT NULL,
        preamble_hash TEXT, turns BIGINT NOT NULL, cwd TEXT NOT NULL,
        created_at BIGINT NOT NULL, reply_preview TEXT, host TEXT);
     CREATE INDEX pins_node ON pins(node);
     CREATE INDEX pins_chain ON pins(chain);
     CREATE INDEX pins_session ON pins(session);
     CREATE TABLE sessions (
        session TEXT PRIMARY KEY, head_uuid TEXT,
        lease_holder TEXT, lease_backend INTEGER,
        draining BOOLEAN NOT NULL DEFAULT false,
        ephemeral BOOLEAN NOT NULL DEFAULT false,
        config_dir TEXT, used_at BIGINT);
     CREATE TABLE attempts (
        id BIGSERIAL PRIMARY KEY, node TEXT NOT NULL, message TEXT NOT NULL,
        session TEXT NOT NULL, pid INTEGER NOT NULL, started_at BIGINT NOT NULL,
        ended_at BIGINT, outcome TEXT, continues BIGINT NOT NULL DEFAULT 0, host TEXT);
     CREATE INDEX attempts_key ON attempts(node, message);
     CREATE TABLE transcript_chunks (
        session TEXT NOT NULL, start BIGINT NOT NULL, len BIGINT NOT NULL,
        sha256 TEXT NOT NULL, data BYTEA NOT NULL,
        uploaded_at BIGINT NOT NULL, host TEXT,
        PRIMARY KEY (session, start));
     -- The in-place lease in one statement: the head checked under the
     -- row's lock, the session's advisory lock taken (held by the caller's
     -- connection until released or gone), the holder written.
     CREATE FUNCTION try_lease(p_session TEXT, p_head TEXT, p_key BIGINT, p_mine BOOLEAN,
                               p_holder TEXT, p_now BIGINT) RETURNS TEXT
     LANGUAGE plpgsql SET search_path = claude_shim, pg_catalog AS $$
     DECLARE
        cur RECORD;
        known BOOLEAN;
     BEGIN
        SELECT head_uuid, draining INTO cur FROM sessions WHERE session = p_session FOR UPDATE;
        known := FOUND;
        IF known AND cur.head_uuid IS DISTINCT FROM p_head THEN
            RETURN 'not-head';
        END IF;
        IF NOT p_mine AND NOT pg_try_advisory_lock(p_key) THEN
            RETURN CASE WHEN known AND cur.draining THEN 'held-draining' ELSE 'held' END;
        END IF;
        INSERT INTO sessions (session, lease_holder, lease_backend, draining, used_at)
        VALUES (p_session, p_holder, pg_backend_pid(), false, p_now)
        ON CONFLICT (session) DO UPDATE SET lease_holder = excluded.lease_holder,
            lease_backend = excluded.lease_backend, draining = false,
            used_at = excluded.used_at;
        RETURN 'taken';
     END $$;",
    // 2: session file scans (see `store::scans`), keyed by the file's path
    // on its host; a scan carries a witness of the bytes it read, so another
    // host's file at the same path starts over rather than carrying it on.
    "CREATE TABLE scans (path TEXT PRIMARY KEY, scan TEXT NOT NULL, at BIGINT NOT NULL);",
    // 3: what every turn sweeps (old attempts, idle ephemeral sessions) is
    // read through an index, not a scan of all sessions.
    "CREATE INDEX attempts_started ON attempts(started_at);
     CREATE INDEX sessions_ephemeral ON sessions(used_at) WHERE ephemeral;",
    // 4: continuation by content (SQLite step 8).
    "ALTER TABLE pins ADD COLUMN prompt TEXT;
     ALTER TABLE pins ADD COLUMN replies TEXT;
     ALTER TABLE pins ADD COLUMN continues BIGINT;
     CREATE INDEX pins_prompted ON pins(scope, id) WHERE prompt IS NOT NULL;",
    // 5: the replay's system prompt differs from the call before (SQLite step 9).
    "ALTER TABLE runs ADD COLUMN replay_misses_prefix BOOLEAN;",
    // 6: metrics (SQLite step 10), the running totals kept per replica
    // (`replica`: the host and its data dir) so that each scrape counts a
    // turn once. They start at this step: runs logged before it name a
    // host, not a replica.
    "ALTER TABLE runs ADD COLUMN cache_miss TEXT;
     ALTER TABLE runs ADD COLUMN prefix TEXT;
     CREATE INDEX runs_session ON runs(session, at);
     CREATE TABLE metric_totals (
        replica TEXT NOT NULL, family TEXT NOT NULL, labels TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (replica, family, labels));",
];

pub const COUNT: usize = MIGRATIONS.len();

/// Bring the schema up to date: one read when it is (every turn), the
/// missing steps under the lock when not.
pub fn apply(pg: &mut Pg) -> Result<()> {
    let current = call!(pg, "reading the schema version", |c| {
        match c.q_opt("SELECT version FROM schema_version", &[]).await {
            Ok(row) => Ok(row.map(|r| r.get::<_, i32>(0) as usize)),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(None),
            Err(e) => Err(e),
        }
    })?;
    if current.is_some_and(|v| v >= COUNT) {
        return Ok(());
    }
    call_tx!(pg, "migrating the schema", |c| {
        let tx = c.transaction().await?;
        tx.x("SELECT pg_advisory_xact_lock($1)", &[&LOCK]).await?;
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS claude_shim;
             CREATE TABLE IF NOT EXISTS claude_shim.schema_version (version INTEGER NOT NULL);",
        )
        .await?;
        let done = match tx
            .q_opt("SELECT version FROM claude_shim.schema_version", &[])
            .await?
        {
            Some(r) => r.get::<_, i32>(0) as usize,
            None => {
                tx.x("INSERT INTO claude_shim.schema_version VALUES (0)", &[])
                    .await?;
                0
            }
        };
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(done) {
            tx.batch_execute(&format!("SET LOCAL search_path = claude_shim; {sql}"))
                .await?;
            tx.x(
                "UPDATE claude_shim.schema_version SET version = $1",
                &[&(i as i32 + 1)],
            )
            .await?;
        }
        tx.commit().await
    })
}
