//! The runs log and the attempts of a turn: as `store::{runs, attempts}`.

use super::conn::{call, owned, Pg, Typed};
use crate::cache_miss::{Prefix, Previous};
use crate::events::Usage;
use crate::identity::Node;
use crate::store::totals::{self, Total};
use crate::store::types::attempts::{AttemptRow, Outcome};
use crate::store::types::runs::Run;
use anyhow::Result;

impl Pg {
    /// Queued (see [`Pg::defer`]): a turn logs its run after the caller has
    /// everything, and nothing waits for the row.
    pub fn log_run(&mut self, run: &Run<'_>, now: i64, replica: &str) -> Result<()> {
        self.queue_run(None, run, now);
        self.queue_totals(replica, &totals::deltas(run, "postgres"));
        Ok(())
    }

    /// Queued: a turn's deltas added to its replica's running totals, in
    /// one statement (sorted, so turns at once lock rows in one order).
    fn queue_totals(&mut self, replica: &str, deltas: &[totals::Delta]) {
        if deltas.is_empty() {
            return;
        }
        self.defer(
            "adding to the metrics' totals",
            "INSERT INTO metric_totals (replica, family, labels, value)
             SELECT $1, f, l, v FROM unnest($2::text[], $3::text[], $4::float8[]) AS t(f, l, v)
             ON CONFLICT (replica, family, labels)
             DO UPDATE SET value = metric_totals.value + EXCLUDED.value",
            vec![
                owned(replica.to_owned()),
                owned(
                    deltas
                        .iter()
                        .map(|d| d.family.to_owned())
                        .collect::<Vec<_>>(),
                ),
                owned(deltas.iter().map(|d| d.labels.clone()).collect::<Vec<_>>()),
                owned(deltas.iter().map(|d| d.value).collect::<Vec<_>>()),
            ],
        );
    }

    pub fn totals(&mut self, replica: &str) -> Result<Vec<Total>> {
        let replica = replica.to_owned();
        let rows = call!(self, "reading the metrics' totals", |c| {
            c.q(
                "SELECT family, labels, value FROM metric_totals WHERE replica = $1",
                &[&replica],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| Total {
                family: r.get(0),
                labels: r.get(1),
                value: r.get(2),
            })
            .collect())
    }

    pub fn cli_versions(&mut self) -> Result<Vec<String>> {
        let rows = call!(self, "reading the CLI versions", |c| {
            c.q(
                "SELECT DISTINCT version FROM capabilities ORDER BY version",
                &[],
            )
            .await
        })?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub fn previous_run(&mut self, session: &str, except: Option<i64>) -> Result<Option<Previous>> {
        let (session, except) = (session.to_owned(), except.unwrap_or(0));
        let row = call!(self, "reading the session's previous run", |c| {
            c.q_opt(
                "SELECT at, prefix, cache_read_tokens + cache_write_tokens FROM runs
                 WHERE session = $1 AND id <> $2 ORDER BY at DESC, id DESC LIMIT 1",
                &[&session, &except],
            )
            .await
        })?;
        Ok(row.map(|r| Previous {
            ended_at: r.get(0),
            prefix: r
                .get::<_, Option<String>>(1)
                .as_deref()
                .and_then(Prefix::from_stored),
            cached: r
                .get::<_, Option<i64>>(2)
                .and_then(|n| u64::try_from(n).ok()),
        }))
    }

    /// As [`Pg::log_run`], for its id (see `Store::begin_run`): the id is
    /// made here, not by the server, so the row is queued like the other
    /// writes (it goes with the turn's pin, in that round trip) instead of
    /// costing one of its own while the caller waits for its result. Drawn
    /// from above 2^62, where the table's sequence never gets; the row keeps
    /// it only if the run never ends (`end_run` writes it anew).
    pub fn begin_run(&mut self, run: &Run<'_>, now: i64) -> Result<i64> {
        let id = (uuid::Uuid::new_v4().as_u64_pair().0 >> 2 | 1 << 62) as i64;
        self.queue_run(Some(id), run, now);
        Ok(id)
    }

    /// Queue a run's row: `id` given (a row written ahead), or the table's
    /// next.
    fn queue_run(&mut self, id: Option<i64>, run: &Run<'_>, now: i64) {
        let usage: Option<Usage> = run.spent.usage.map(|(u, _)| u);
        let n = |f: fn(&Usage) -> u64| usage.as_ref().map(|u| f(u) as i64);
        let text = |s: Option<&str>| s.map(str::to_owned);
        self.defer(
            "logging the run",
            "INSERT INTO runs (id, at, cwd, kind, exit, bytes_in, bytes_sent, input_tokens,
                cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, session,
                why_code, why, total_cost_usd, usage_from, conv_key, engine, host,
                replay_misses_prefix, cache_miss, prefix)
             VALUES (COALESCE($20, nextval(pg_get_serial_sequence('runs', 'id'))),
                     $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                     $16, $17, $18, $19, $21, $22, $23)",
            vec![
                owned(now),
                owned(run.cwd.to_owned()),
                owned(run.kind.as_str().to_owned()),
                owned(run.exit),
                owned(run.bytes_in as i64),
                owned(run.bytes_sent as i64),
                owned(n(|u| u.input_tokens)),
                owned(n(|u| u.cache_creation_input_tokens)),
                owned(n(|u| u.cache_read_input_tokens)),
                owned(n(|u| u.output_tokens)),
                owned(run.spent.cost_usd),
                owned(text(run.session)),
                owned(run.why_code.to_owned()),
                owned(run.why.to_owned()),
                owned(run.spent.total_cost_usd),
                owned(text(run.spent.usage.map(|(_, from)| from.as_str()))),
                owned(text(run.conv_key)),
                owned(run.engine.as_str().to_owned()),
                owned(self.host.clone()),
                owned(id),
                owned(run.replay_misses_prefix),
                owned(run.cache_miss.map(|m| m.as_str().to_owned())),
                owned(run.prefix.map(|p| p.to_stored())),
            ],
        );
    }

    /// Queued: completes a row [`Pg::begin_run`] wrote (replaced by the
    /// whole row, timed now; both statements go in one round trip).
    pub fn end_run(&mut self, id: i64, run: &Run<'_>, now: i64, replica: &str) -> Result<()> {
        self.defer(
            "completing the run's row",
            "DELETE FROM runs WHERE id = $1",
            vec![owned(id)],
        );
        self.log_run(run, now, replica)
    }

    pub fn run_counts(&mut self) -> Result<Vec<(String, i64)>> {
        let rows = call!(self, "counting runs", |c| {
            c.q(
                "SELECT kind, COUNT(*) FROM runs GROUP BY kind ORDER BY kind",
                &[],
            )
            .await
        })?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub fn start_attempt(
        &mut self,
        node: &Node,
        message: &str,
        session: &str,
        pid: i32,
        continues: i64,
        now: i64,
    ) -> Result<i64> {
        let host = self.host.clone();
        call!(self, "recording an attempt", |c| {
            let row = c
                .q_one(
                    "INSERT INTO attempts (node, message, session, pid, started_at, continues, host)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    &[&node.as_str(), &message, &session, &pid, &now, &continues, &host],
                )
                .await?;
            Ok(row.get(0))
        })
    }

    /// Queued (see [`Pg::defer`]): sent with the turn's next statement,
    /// the pin at its result when there is one.
    pub fn end_attempt(&mut self, id: i64, outcome: Outcome, now: i64) -> Result<()> {
        self.defer(
            "ending an attempt",
            "UPDATE attempts SET ended_at = $2, outcome = $3 WHERE id = $1",
            vec![owned(id), owned(now), owned(outcome.as_str().to_owned())],
        );
        Ok(())
    }

    pub fn last_attempt(
        &mut self,
        node: &Node,
        message: &str,
        since: i64,
    ) -> Result<Option<AttemptRow>> {
        let row = call!(self, "reading the last attempt", |c| {
            c.q_opt(
                "SELECT id, session, pid, started_at, outcome, continues FROM attempts
                 WHERE node = $1 AND message = $2 AND started_at >= $3
                 ORDER BY id DESC LIMIT 1",
                &[&node.as_str(), &message, &since],
            )
            .await
        })?;
        Ok(row.map(|r| AttemptRow {
            id: r.get(0),
            session: r.get(1),
            pid: r.get(2),
            started_at: r.get(3),
            outcome: r.get::<_, Option<&str>>(4).map(Outcome::parse),
            continues: r.get(5),
        }))
    }

    pub fn prune_attempts(&mut self, before: i64) -> Result<usize> {
        let n = call!(self, "pruning attempts", |c| {
            c.x("DELETE FROM attempts WHERE started_at < $1", &[&before])
                .await
        })?;
        Ok(n as usize)
    }
}
