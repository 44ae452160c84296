//! Append-only schema migrations; `user_version` counts those applied.
//! Never edit a shipped entry: add a new one.

use anyhow::Result;
use rusqlite::Connection;

const MIGRATIONS: &[&str] = &[
    // 1: capability cache and runs log.
    "CREATE TABLE capabilities (
        path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        version TEXT NOT NULL,
        resume INTEGER NOT NULL, fork_session INTEGER NOT NULL,
        session_id INTEGER NOT NULL, resume_session_at INTEGER NOT NULL,
        probed_at INTEGER NOT NULL,
        PRIMARY KEY (path, size, mtime_ns));
     CREATE TABLE runs (
        id INTEGER PRIMARY KEY, at INTEGER NOT NULL, cwd TEXT NOT NULL,
        kind TEXT NOT NULL, exit INTEGER, bytes_in INTEGER NOT NULL, bytes_sent INTEGER NOT NULL,
        input_tokens INTEGER, cache_write_tokens INTEGER, cache_read_tokens INTEGER,
        output_tokens INTEGER, cost_usd REAL, session TEXT, note TEXT);
     CREATE INDEX runs_at ON runs(at);",
    // 2: pins (one per conversation node and reply) and session heads/leases.
    "CREATE TABLE pins (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL, chain TEXT NOT NULL, session TEXT NOT NULL,
        assistant_uuid TEXT, reply_hashes TEXT NOT NULL, preamble_hash TEXT,
        turns INTEGER NOT NULL, cwd TEXT NOT NULL,
        created_at INTEGER NOT NULL, reply_preview TEXT);
     CREATE INDEX pins_node ON pins(scope, chain);
     CREATE INDEX pins_session ON pins(session);
     CREATE TABLE sessions (
        session TEXT PRIMARY KEY, head_uuid TEXT,
        lease_pid INTEGER, lease_until INTEGER);",
    // 3: per-part identity (why a turn missed), reasons and true per-turn
    // costs in the runs log, ephemeral sessions, interrupted attempts.
    // Costs logged before this were the CLI's running totals: kept as such,
    // and a turn's own cost stays only where total = own (fresh sessions).
    "ALTER TABLE pins RENAME COLUMN chain TO node;
     ALTER TABLE pins ADD COLUMN chain TEXT;
     ALTER TABLE pins ADD COLUMN parts TEXT;
     ALTER TABLE pins ADD COLUMN conv_key TEXT;
     CREATE INDEX pins_chain ON pins(chain);
     ALTER TABLE sessions ADD COLUMN draining INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE sessions ADD COLUMN ephemeral INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE sessions ADD COLUMN config_dir TEXT;
     ALTER TABLE sessions ADD COLUMN used_at INTEGER;
     ALTER TABLE runs ADD COLUMN why_code TEXT;
     ALTER TABLE runs ADD COLUMN why TEXT;
     ALTER TABLE runs ADD COLUMN total_cost_usd REAL;
     ALTER TABLE runs ADD COLUMN usage_from TEXT;
     ALTER TABLE runs ADD COLUMN conv_key TEXT;
     UPDATE runs SET total_cost_usd = cost_usd;
     UPDATE runs SET cost_usd = NULL WHERE kind NOT IN ('fresh', 'fallback');
     CREATE TABLE attempts (
        id INTEGER PRIMARY KEY, node TEXT NOT NULL, message TEXT NOT NULL,
        session TEXT NOT NULL, pid INTEGER NOT NULL, started_at INTEGER NOT NULL,
        ended_at INTEGER, outcome TEXT, continues INTEGER NOT NULL DEFAULT 0);
     CREATE INDEX attempts_key ON attempts(node, message);",
    // 4: how each turn ran: a cold CLI, a live process's next turn (warm), a
    // new live process, or the Agent SDK handshake.
    "ALTER TABLE runs ADD COLUMN engine TEXT;",
    // 5: session file scans (title, counts, compactions), carried on as the
    // file grows.
    "CREATE TABLE scans (path TEXT PRIMARY KEY, scan TEXT NOT NULL, at INTEGER NOT NULL);",
    // 6: attempts past any retry window are dropped as turns start.
    "CREATE INDEX attempts_started ON attempts(started_at);",
    // 7: pins are looked up by node alone since the node took the scope in
    // (migration 3); the (scope, node) index could not serve that, so every
    // turn scanned the whole table (35 ms at 100,000 pins). And the sweep of
    // ephemeral sessions every turn makes reads only those.
    "CREATE INDEX pins_by_node ON pins(node);
     CREATE INDEX sessions_ephemeral ON sessions(used_at) WHERE ephemeral = 1;",
    // 8: continuation by content: a pin keeps the prompt its run was given
    // and the reply forms it got, for the next turn to be matched against
    // (see `crate::continuation`); `continues` is the pin that run continued.
    "ALTER TABLE pins ADD COLUMN prompt TEXT;
     ALTER TABLE pins ADD COLUMN replies TEXT;
     ALTER TABLE pins ADD COLUMN continues INTEGER;
     CREATE INDEX pins_prompted ON pins(scope, id) WHERE prompt IS NOT NULL;",
    // 9: whether the turn's call, made without the shim, would have sent
    // another system prompt than the call before it (`cost::system_differs`):
    // the estimate of the saving counts the cached prefix it writes anew.
    "ALTER TABLE runs ADD COLUMN replay_misses_prefix INTEGER;",
    // 10: metrics (`store::totals`): why a resumed turn missed the prompt
    // cache, and what moves the cached prefix for the session's next turn
    // to compare (looked up by session); the running totals a scrape reads,
    // started from the runs already logged.
    "ALTER TABLE runs ADD COLUMN cache_miss TEXT;
     ALTER TABLE runs ADD COLUMN prefix TEXT;
     CREATE INDEX runs_session ON runs(session, id);
     CREATE TABLE metric_totals (
        family TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL,
        PRIMARY KEY (family, labels)) WITHOUT ROWID;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_turns', 'kind=' || kind || ',engine=' || COALESCE(engine, 'cold'),
               COUNT(*) FROM runs GROUP BY 2;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_fallbacks', 'reason=' || COALESCE(why_code, 'other'), COUNT(*)
        FROM runs WHERE kind IN ('fallback', 'unchanged') GROUP BY 2;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_prompt_received_bytes', '', SUM(bytes_in) FROM runs HAVING COUNT(*) > 0;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_prompt_sent_bytes', '', SUM(bytes_sent) FROM runs HAVING COUNT(*) > 0;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_cost_usd', '', SUM(cost_usd) FROM runs WHERE cost_usd >= 0
        HAVING COUNT(*) > 0;
     INSERT INTO metric_totals (family, labels, value)
        SELECT 'claude_shim_tokens', 'type=' || t.ty, SUM(t.n) FROM (
            SELECT 'input' AS ty, input_tokens AS n FROM runs
            UNION ALL SELECT 'output', output_tokens FROM runs
            UNION ALL SELECT 'cacheRead', cache_read_tokens FROM runs
            UNION ALL SELECT 'cacheCreation', cache_write_tokens FROM runs) t
        WHERE t.n IS NOT NULL GROUP BY t.ty;",
];

pub const COUNT: usize = MIGRATIONS.len();

/// Apply what is missing inside the caller's transaction (`doctor`'s
/// trial, which rolls it back).
pub fn apply_within(conn: &Connection) -> Result<()> {
    let done: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done.max(0) as usize) {
        conn.execute_batch(sql)?;
        conn.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    Ok(())
}

/// Apply what is missing. Each step re-reads the version inside an
/// IMMEDIATE transaction, so concurrent first runs cannot apply one twice.
pub fn apply(conn: &Connection) -> Result<()> {
    let version = |c: &Connection| -> rusqlite::Result<usize> {
        c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            .map(|v| v.max(0) as usize)
    };
    if version(conn)? >= COUNT {
        return Ok(());
    }
    loop {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let done = version(conn)?;
        let Some(sql) = MIGRATIONS.get(done) else {
            conn.execute_batch("COMMIT")?;
            return Ok(());
        };
        let step = conn
            .execute_batch(sql)
            .and_then(|()| conn.pragma_update(None, "user_version", (done + 1) as i64));
        match step {
            Ok(()) => conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e.into());
            }
        }
    }
}
