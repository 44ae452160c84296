//! The shared store's connection: the bounded calls every statement goes
//! through (`Io`, `call!`), the connected backend (`Pg`) and typed statement
//! parameters. Each topic's file adds its statements to `Pg`; how a
//! connection starts (connecting, the schema) is `open`'s, above this.
//!
//! Every call is bounded on the client side (a stopped or unreachable
//! server must not hold a turn up): a turn spends at most [`TURN_BUDGET`] in
//! all waiting for the store, then each further call fails at once and the
//! turn goes on without it. The server bounds each statement too
//! (`statement_timeout`, `lock_timeout`). A call that timed out leaves the
//! connection in an unknown state: it is not used again.

use super::schema;
use anyhow::{anyhow, bail, Context, Result};
use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Error, GenericClient, Row};

/// What a turn may spend waiting for the store, every call together.
pub const TURN_BUDGET: Duration = Duration::from_millis(1500);
/// Connecting may take at most this (within the budget).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1000);

/// How long store calls may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// A turn: [`TURN_BUDGET`] over all calls of the process.
    Turn,
    /// Management commands and the keeper: each call at most this.
    Each(Duration),
}

pub(super) struct Io {
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) patience: Patience,
    pub(super) spent: Duration,
    /// Why the connection may not be used any more.
    pub(super) broken: Option<String>,
    /// The local note that the schema is up to date (see `schema`), when
    /// this process keeps one.
    pub(super) schema_marker: Option<PathBuf>,
}

/// The connection settings of `url`, with ours: the schema, and the
/// server's own bounds on each statement (see the module's comment).
pub(super) fn config(url: &str, patience: Patience) -> Result<Config> {
    let mut config: Config = url.parse().context("reading the store URL")?;
    let per_call = match patience {
        Patience::Turn => TURN_BUDGET,
        Patience::Each(d) => d,
    };
    let ms = per_call.as_millis();
    let ours = format!(
        "-c search_path=claude_shim -c statement_timeout={ms} -c lock_timeout={ms} \
         -c idle_in_transaction_session_timeout={}",
        ms * 4
    );
    let options = match config.get_options() {
        Some(theirs) if !theirs.is_empty() => format!("{theirs} {ours}"),
        _ => ours,
    };
    config
        .options(options)
        .application_name("claude-shim")
        .connect_timeout(CONNECT_TIMEOUT.min(per_call))
        .tcp_user_timeout(per_call)
        .keepalives_idle(Duration::from_secs(30));
    Ok(config)
}

impl Io {
    pub(super) fn new(patience: Patience) -> Result<Io> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("starting the store's I/O")?;
        Ok(Io {
            rt,
            patience,
            spent: Duration::ZERO,
            broken: None,
            schema_marker: None,
        })
    }

    fn limit(&self) -> Result<Duration> {
        if let Some(why) = &self.broken {
            bail!("the store connection is unusable ({why})");
        }
        Ok(match self.patience {
            Patience::Turn => {
                let left = TURN_BUDGET.saturating_sub(self.spent);
                if left.is_zero() {
                    bail!(
                        "the store's budget for this turn ({} ms) is spent",
                        TURN_BUDGET.as_millis()
                    );
                }
                left
            }
            Patience::Each(d) => d,
        })
    }

    /// Run one call to the end or to the limit, the writes `queued` before
    /// it sent ahead of it in the same round trip (each its own implicit
    /// transaction, run by the server in order). A queued write that fails
    /// is reported here; the call's own result is returned.
    pub(super) fn block<T, F>(
        &mut self,
        what: &str,
        client: &Client,
        queued: Vec<Queued>,
        f: F,
    ) -> Result<T>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        if queued.is_empty() {
            return self.block_alone(what, f);
        }
        let n = queued.len();
        let labelled = format!(
            "{what}, with {n} queued write{}",
            if n == 1 { "" } else { "s" }
        );
        let (written, out) = self.block_alone(&labelled, async {
            // `join` polls the writes first: their requests go out ahead.
            let writes = futures_util::future::join_all(queued.iter().map(|w| w.send(client)));
            Ok(futures_util::future::join(writes, f).await)
        })?;
        for (w, r) in queued.iter().zip(written) {
            match r {
                Err(e) => {
                    self.note_failure(&e);
                    crate::error!("store: {}: {}", w.what, describe(&e));
                }
                Ok(n) => match w.rows {
                    Some(want) if want != n => crate::error!(
                        "store: {}: {n} rows written, not {want} ({})",
                        w.what,
                        w.unlike
                    ),
                    _ => {}
                },
            }
        }
        out.map_err(|e| self.failed(what, e))
    }

    pub(super) fn block_alone<T, F>(&mut self, what: &str, f: F) -> Result<T>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let limit = self.limit()?;
        let start = Instant::now();
        let out = self
            .rt
            .block_on(async { tokio::time::timeout(limit, f).await });
        self.spent += start.elapsed();
        crate::debug!("store: {what} ({} µs)", start.elapsed().as_micros());
        match out {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.failed(what, e)),
            Err(_) => {
                self.broken = Some(format!("{what} timed out"));
                bail!(
                    "store: {what} timed out after {} ms",
                    start.elapsed().as_millis()
                )
            }
        }
    }

    fn failed(&mut self, what: &str, e: tokio_postgres::Error) -> anyhow::Error {
        self.note_failure(&e);
        anyhow!(describe(&e)).context(format!("store: {what}"))
    }

    /// What a failed statement says of the connection and of the schema.
    fn note_failure(&mut self, e: &tokio_postgres::Error) {
        if e.is_closed() {
            self.broken = Some("the server closed it".into());
        }
        if schema::is_missing_object(e) {
            // The schema is not what the marker said (dropped, restored
            // from an older copy): the next process checks it again.
            if let Some(marker) = &self.schema_marker {
                schema::forget(marker);
            }
        }
    }
}

/// A write whose answer nobody waits for (a run's log row, an attempt's
/// end, a scan): queued by a turn, it goes out ahead of the next statement,
/// in that statement's round trip, or when the store is dropped or flushed.
pub(crate) struct Queued {
    what: &'static str,
    sql: &'static str,
    args: Vec<Box<dyn DynArg + Send>>,
    /// The rows it must write, when another count is a failure (a
    /// conditional write that found the condition false), and what that
    /// failure means.
    rows: Option<u64>,
    unlike: String,
}

impl Queued {
    async fn send(&self, client: &Client) -> Result<u64, tokio_postgres::Error> {
        let args: Vec<&dyn DynArg> = self.args.iter().map(|a| &**a as &dyn DynArg).collect();
        client.x(self.sql, &args).await
    }
}

/// A PostgreSQL error with the server's message, when there is one.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    }
}

pub struct Pg {
    /// Before `client`: dropping the runtime first ends the connection's
    /// task, so the client's goodbye is never sent (`handoff` relies on it;
    /// the server reads the socket's end as the same goodbye).
    pub(super) io: Io,
    pub(super) client: Client,
    /// Sessions whose lease (advisory lock) this connection holds.
    pub(super) held: HashSet<String>,
    /// `host:pid`, written as the lease holder.
    pub(super) holder: String,
    pub(super) host: String,
    /// Transcript manifests read (and appended to) by this process: a turn
    /// reads one when it hydrates and again when it uploads. Appends are
    /// conditional on the stored end, so a stale entry makes an upload
    /// fail (as a race would), never write in the wrong place.
    pub(super) manifests:
        std::collections::HashMap<String, Vec<crate::store::types::transcripts::Chunk>>,
    /// Writes waiting for the next round trip (a turn's only; see [`Queued`]).
    pub(super) queued: Vec<Queued>,
    /// A session file's scan a turn will read: read with its lease, in that
    /// round trip (`scan_wanted`), and kept (`scans`) with what it saves.
    pub(super) scan_wanted: Option<String>,
    pub(super) scans: std::collections::HashMap<String, Option<String>>,
}

/// Run `$body` (an async block using `$c: &Client`) as one bounded call,
/// the queued writes sent ahead of it in the same round trip.
macro_rules! call {
    ($pg:expr, $what:expr, |$c:ident| $body:expr) => {{
        let pg = &mut *$pg;
        let queued = std::mem::take(&mut pg.queued);
        let $c = &pg.client;
        pg.io.block($what, $c, queued, async move { $body })
    }};
}
pub(crate) use call;

/// As [`call!`], for a body that needs `$c: &mut Client` (a transaction):
/// the queued writes go first, in a round trip of their own.
macro_rules! call_tx {
    ($pg:expr, $what:expr, |$c:ident| $body:expr) => {{
        let pg = &mut *$pg;
        pg.flush();
        let $c = &mut pg.client;
        pg.io.block_alone($what, async move { $body })
    }};
}
pub(crate) use call_tx;

impl Pg {
    /// Queue a write nobody waits for: a turn sends it with its next
    /// statement (or when it flushes, or drops the store); everyone else,
    /// at once. Its failure is reported then, as a failed write would be.
    pub(crate) fn defer(
        &mut self,
        what: &'static str,
        sql: &'static str,
        args: Vec<Box<dyn DynArg + Send>>,
    ) {
        self.defer_expecting(what, sql, args, None, String::new());
    }

    /// As [`Pg::defer`], for a write that fails unless it writes `rows`
    /// rows (`unlike`: what another count means, for the log).
    pub(crate) fn defer_expecting(
        &mut self,
        what: &'static str,
        sql: &'static str,
        args: Vec<Box<dyn DynArg + Send>>,
        rows: Option<u64>,
        unlike: String,
    ) {
        self.queued.push(Queued {
            what,
            sql,
            args,
            rows,
            unlike,
        });
        if self.io.patience != Patience::Turn {
            self.flush();
        }
    }

    /// Send the queued writes now.
    pub fn flush(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let n = self.queued.len();
        let sent = call!(self, "sending queued writes", |_c| {
            Ok::<(), tokio_postgres::Error>(())
        });
        if let Err(e) = sent {
            crate::error!("store: {n} queued writes were not sent: {e:#}");
        }
    }

    /// How long this process has waited for the store so far.
    pub fn spent(&self) -> Duration {
        self.io.spent
    }

    pub fn schema_version(&mut self) -> Result<i64> {
        call!(self, "reading the schema version", |c| {
            let row = c
                .query_one("SELECT version FROM schema_version", &[])
                .await?;
            Ok(row.get::<_, i32>(0) as i64)
        })
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A statement parameter that knows its PostgreSQL type, so a statement
/// is sent with its parameters in one round trip (no prepare first): a
/// turn's few statements, each once, cost round trips and nothing else.
pub(crate) trait Arg: ToSql + Sync {
    const TYPE: Type;
}

macro_rules! arg {
    ($($t:ty => $ty:ident),* $(,)?) => {
        $(impl Arg for $t {
            const TYPE: Type = Type::$ty;
        })*
    };
}
arg!(&str => TEXT, String => TEXT, i64 => INT8, i32 => INT4, bool => BOOL,
     f64 => FLOAT8, &[u8] => BYTEA, Vec<u8> => BYTEA, Vec<String> => TEXT_ARRAY,
     Vec<f64> => FLOAT8_ARRAY);

impl<T: Arg> Arg for Option<T> {
    const TYPE: Type = T::TYPE;
}

/// [`Arg`] as a trait object.
pub(crate) trait DynArg: Sync {
    fn pair(&self) -> (&(dyn ToSql + Sync), Type);
}

impl<T: Arg> DynArg for T {
    fn pair(&self) -> (&(dyn ToSql + Sync), Type) {
        (self, T::TYPE)
    }
}

/// An owned parameter of a queued write.
pub(crate) fn owned<T: Arg + Send + 'static>(v: T) -> Box<dyn DynArg + Send> {
    Box::new(v)
}

fn typed<'a>(args: &'a [&'a dyn DynArg]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    args.iter().map(|a| a.pair()).collect()
}

/// Statements with typed parameters, on a client or a transaction.
pub(crate) trait Typed: GenericClient {
    async fn q(&self, sql: &str, args: &[&dyn DynArg]) -> Result<Vec<Row>, Error> {
        self.query_typed(sql, &typed(args)).await
    }
    async fn q_opt(&self, sql: &str, args: &[&dyn DynArg]) -> Result<Option<Row>, Error> {
        self.query_typed_opt(sql, &typed(args)).await
    }
    async fn q_one(&self, sql: &str, args: &[&dyn DynArg]) -> Result<Row, Error> {
        self.query_typed_one(sql, &typed(args)).await
    }
    async fn x(&self, sql: &str, args: &[&dyn DynArg]) -> Result<u64, Error> {
        self.execute_typed(sql, &typed(args)).await
    }
}

impl<C: GenericClient> Typed for C {}

/// The advisory-lock key of a session's lease.
pub fn lease_key(session: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let d = Sha256::new()
        .chain_update(b"claude-shim lease\0")
        .chain_update(session.as_bytes())
        .finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_le_bytes(b)
}
