//! What the metrics (issue 36) cost, side by side in one run: prints
//! figures, asserts nothing. `nice -n 10 cargo bench --bench metrics`.
//!
//! 1. **A turn's record.** What the metrics add where a turn is recorded:
//!    the runs row *and* its running totals (`Runs::log_run`/`end_run`: a
//!    SAVEPOINT, the row, `store::totals::deltas`, one multi-row UPSERT into
//!    `metric_totals`) against the row alone as the build before wrote it
//!    (`begin_run`, on a copy of the same store without what the metrics
//!    added to the schema: the `runs_session` index and the `prefix` column
//!    filled). Four stores, copies of one seeded store, timed interleaved
//!    (the order rotating each round), at 1,000 and at 100,000 turns. The
//!    UPSERT's statement is prepared anew each time (a turn is one process,
//!    its statement cache empty), and also timed with it cached. Then, in
//!    process and without a store: `deltas`, `timeline::now`, and the
//!    turn's prefix fingerprint (`turn::cache::prefix`, for a CLI of 2.1 or
//!    later: no start-up snapshot, whose stat calls only older CLIs pay); the
//!    session file's part (`sessions::find`, and
//!    `sessions::last_request`: each turn reads its session file's tail for
//!    the model and shape of the CLI's last request); and
//!    `Totals::previous_run`, which only a turn that missed its cache asks.
//! 2. **A scrape** with 1,000 and with 100,000 turns in the store, the
//!    stores interleaved: `Store::totals` + `cli_versions`,
//!    `exposition::render`, the whole `Source::snapshot` + render as the
//!    endpoint does it, and an HTTP GET of `claude-shim metrics --serve`;
//!    beside them `run_counts` (a GROUP BY over the runs log: what a scrape
//!    that counted the log would pay).
//! 3. **Whole processes against the build before** (`BENCH_PREV_SHIM`, else
//!    `/tmp/prev/target/release/claude-shim` when it is there: build it with
//!    `git worktree add /tmp/prev accd7e5 && cd /tmp/prev && cargo build
//!    --release --bin claude-shim`): pass-through `claude --version` over
//!    `/bin/true`, and a fresh managed `-p` turn (1 KiB transcript) over the
//!    tests' fake CLI, this build / the build before / the CLI directly,
//!    interleaved.
//!
//! Knobs: `BENCH_N_TURN` (reps per record case, default 2000),
//! `BENCH_N_SCRAPE` (scrapes per size, default 200), `BENCH_N` (process runs
//! per side, default 400), `BENCH_SIZES` (turns in the stores, default
//! `1000,100000`), `BENCH_ONLY` (sections: `record,scrape,process`).
//!
//! Timing helpers and the fake CLI's set-up are `--bench overhead`'s
//! (`benches/overhead/measure.rs`, `setup.rs`).

#[path = "overhead/measure.rs"]
#[allow(dead_code)]
mod measure;
#[path = "overhead/setup.rs"]
#[allow(dead_code)]
mod setup;

use claude_shim::cache_miss::{part, CacheMiss, Prefix};
use claude_shim::cli::metrics::exposition::{self, Format, Snapshot};
use claude_shim::cli::metrics::source::Source;
use claude_shim::events::Usage;
use claude_shim::store::runs::{Engine, Kind, Run, Spent, UsageFrom};
use claude_shim::store::Store;
use claude_shim::timeline::Timing;
use measure::{env_or, machine, quantile};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// What `setup.rs` takes from its bench's root.
const FAKE: &str = env!("CARGO_BIN_EXE_fake-claude");
const ASSISTANT_UUID: &str = "5e1f0000-0000-4000-8000-00000000a551";
const REPLY_BYTES: usize = 1500;
const TIME: &str = "/usr/bin/time";

/// This build: `BENCH_SHIM`, else the one cargo built.
fn shim_exe() -> PathBuf {
    std::env::var_os("BENCH_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-shim")))
}

/// The build before the metrics: `BENCH_PREV_SHIM`, else the worktree's.
fn prev_exe() -> Option<PathBuf> {
    std::env::var_os("BENCH_PREV_SHIM")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/tmp/prev/target/release/claude-shim")))
        .filter(|p| p.is_file())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// `n` rounds of every case, the order rotating each round (so none always
/// runs first, on a warmer cache), after `warm` rounds unmeasured. Samples
/// in µs, per case.
fn interleave(n: usize, warm: usize, cases: &mut [&mut dyn FnMut() -> Duration]) -> Vec<Vec<f64>> {
    let k = cases.len();
    let mut out = vec![Vec::with_capacity(n); k];
    for round in 0..warm + n {
        for j in 0..k {
            let c = (round + j) % k;
            let t = (cases[c])();
            if round >= warm {
                out[c].push(us(t));
            }
        }
    }
    out
}

/// Median of the per-round differences `a − b`.
fn paired(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    quantile(&d, 0.5)
}

/// Per-sample time of `batch` calls of `f`, over `n` samples, in µs per call.
fn per_call(n: usize, batch: usize, mut f: impl FnMut()) -> Vec<f64> {
    for _ in 0..batch {
        f();
    }
    (0..n)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            us(t.elapsed()) / batch as f64
        })
        .collect()
}

// ---------------------------------------------------------------- turns

const KINDS: [Kind; 11] = [
    Kind::Resumed,
    Kind::Resumed,
    Kind::Resumed,
    Kind::Resumed,
    Kind::Resumed,
    Kind::Resumed,
    Kind::Fresh,
    Kind::Fresh,
    Kind::Forked,
    Kind::Fallback,
    Kind::Unchanged,
];
const ENGINES: [Engine; 5] = [
    Engine::Cold,
    Engine::Warm,
    Engine::Live,
    Engine::Ready,
    Engine::Handshake,
];
const FALLBACK_CODES: [&str; 4] = [
    "resume-refused",
    "session-missing",
    "unrecognised",
    "store-unavailable",
];

/// The strings a turn's row borrows.
struct Owned {
    session: String,
    conv_key: String,
    cwd: String,
}

fn owned(i: usize) -> Owned {
    let s = i / 5;
    Owned {
        session: format!("{:08x}-0000-4000-8000-{:012x}", s, s * 7919),
        conv_key: format!("{:016x}{:016x}", s * 2654435761, s ^ 0x5bd1e995),
        cwd: format!("/home/someone/project-{}", s % 500),
    }
}

/// Turn `i` of a varied history: every kind × engine within 55 turns,
/// fallback reasons, cache misses of every reason, failures, errors, and
/// times across the histograms' buckets.
fn varied<'a>(i: usize, o: &'a Owned, prefix: &'a Prefix) -> Run<'a> {
    let kind = KINDS[i % KINDS.len()];
    let h = (i.wrapping_mul(2654435761)) % 1000;
    let usage = Usage {
        input_tokens: 3 + (h as u64 % 40),
        cache_creation_input_tokens: 200 + (h as u64 * 37) % 4_000,
        cache_read_input_tokens: 10_000 + (h as u64 * 131) % 60_000,
        output_tokens: 50 + (h as u64 * 7) % 900,
        ..Default::default()
    };
    let steps = |base: f64, r: f64, m: usize| base * r.powi((h % m) as i32);
    Run {
        cwd: &o.cwd,
        kind,
        why_code: match kind {
            Kind::Fallback | Kind::Unchanged => FALLBACK_CODES[(i / 11) % 4],
            k => k.as_str(),
        },
        why: "resumed in place (the pin is the session's head)",
        exit: i32::from(i % 53 == 0),
        bytes_in: 2_000 + h * 97,
        bytes_sent: 300 + h,
        spent: Spent {
            usage: (i % 17 != 0).then_some((usage, UsageFrom::Result)),
            cost_usd: (i % 19 != 0).then_some(0.0005 + (h as f64) * 0.00003),
            total_cost_usd: Some(0.05 + (h as f64) * 0.0004),
        },
        session: Some(&o.session),
        conv_key: Some(&o.conv_key),
        engine: ENGINES[(i / KINDS.len()) % ENGINES.len()],
        replay_misses_prefix: i % 23 == 0,
        cache_miss: (kind == Kind::Resumed && i % 7 == 0)
            .then(|| CacheMiss::ALL[(i / 7) % CacheMiss::ALL.len()]),
        prefix: Some(prefix),
        timing: Some(Timing {
            turn: steps(0.08, 1.9, 14),
            overhead: (i % 29 != 0).then(|| steps(0.0003, 1.8, 15)),
            first_byte: (i % 31 != 0).then(|| steps(0.05, 1.9, 14)),
            store_wait: steps(0.0001, 2.0, 12),
        }),
        errors: u64::from(i % 97 == 0),
        cold: (i % 3 == 0).then_some("single-shot"),
    }
}

/// The turn timed: resumed in a warm CLI, its usage, cost and times known.
fn timed_run<'a>(o: &'a Owned, prefix: Option<&'a Prefix>, metrics: bool) -> Run<'a> {
    Run {
        cwd: &o.cwd,
        kind: Kind::Resumed,
        why_code: "resumed",
        why: "resumed in place (the pin is the session's head)",
        exit: 0,
        bytes_in: 48_200,
        bytes_sent: 910,
        spent: Spent {
            usage: Some((
                Usage {
                    input_tokens: 12,
                    cache_creation_input_tokens: 350,
                    cache_read_input_tokens: 48_000,
                    output_tokens: 420,
                    ..Default::default()
                },
                UsageFrom::Result,
            )),
            cost_usd: Some(0.0312),
            total_cost_usd: Some(0.41),
        },
        session: Some(&o.session),
        conv_key: Some(&o.conv_key),
        engine: Engine::Warm,
        replay_misses_prefix: false,
        cache_miss: None,
        prefix,
        timing: metrics.then_some(Timing {
            turn: 2.8,
            overhead: Some(0.0016),
            first_byte: Some(1.9),
            store_wait: 0.0004,
        }),
        errors: 0,
        cold: None,
    }
}

fn sqlite(store: &Store) -> &rusqlite::Connection {
    store.sqlite().expect("a SQLite store")
}

fn checkpoint_truncate(store: &Store) {
    let _: i64 = sqlite(store)
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .expect("checkpoint");
}

fn rows(store: &Store, table: &str) -> i64 {
    sqlite(store)
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

/// `n` varied turns through `log_run` (so the totals are as turns leave
/// them), in one transaction; the WAL checkpointed and truncated.
fn seed(dir: &Path, n: usize, prefix: &Prefix) -> Duration {
    let t = Instant::now();
    let store = Store::open_in(dir).expect("open store");
    sqlite(&store).execute_batch("BEGIN").expect("begin");
    for i in 0..n {
        let o = owned(i);
        store.log_run(&varied(i, &o, prefix)).expect("log_run");
    }
    sqlite(&store).execute_batch("COMMIT").expect("commit");
    checkpoint_truncate(&store);
    t.elapsed()
}

/// A copy of the seeded store in a new directory.
fn copy_of(seeded: &Path) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("claude-shim-metrics.")
        .tempdir()
        .expect("tempdir");
    std::fs::copy(seeded.join("shim.db"), dir.path().join("shim.db")).expect("copy store");
    dir
}

/// The same store as the build before had it: no `runs_session` index, no
/// prefix or cache-miss reason in the rows.
fn as_before(dir: &Path) {
    let store = Store::open_in(dir).expect("open store");
    sqlite(&store)
        .execute_batch(
            "DROP INDEX runs_session;
             UPDATE runs SET prefix = NULL, cache_miss = NULL;
             VACUUM;",
        )
        .expect("the schema before");
    checkpoint_truncate(&store);
}

/// A realistic place for a turn: a git checkout with a CLAUDE.md, its cwd a
/// directory below, the config dir with its own CLAUDE.md.
struct Place {
    _dir: tempfile::TempDir,
    cwd: String,
    config_dir: PathBuf,
    cli: PathBuf,
}

/// A session of Claude Code 2.1 (an `api-request` record each request).
const SESSION_21: &str = "21000000-0000-4000-8000-000000000021";
/// A session without one (releases before 2.1; the tests' fake CLI).
const SESSION_OLD: &str = "0d000000-0000-4000-8000-0000000000d0";
/// Project directories under the config dir (`sessions::find` reads them).
const PROJECTS: usize = 30;

/// A session file of about `bytes` shaped like the CLI's: per turn a user
/// message, an attachment, the API request's record (where `api_request`)
/// and a two-block answer.
fn session_file(path: &Path, bytes: usize, api_request: bool) {
    let filler = "lorem ipsum dolor sit amet ".repeat(150);
    let mut out = String::with_capacity(bytes + (64 << 10));
    let mut turn = 0;
    while out.len() < bytes {
        turn += 1;
        out.push_str(&format!(
            "{{\"type\":\"user\",\"cwd\":\"/w\",\"version\":\"2.1.330\",\"message\":{{\"role\":\"user\",\"content\":\"question {turn}\"}}}}\n"
        ));
        out.push_str(&format!(
            "{{\"type\":\"attachment\",\"attachment\":{{\"content\":\"{filler}\"}}}}\n"
        ));
        if api_request {
            out.push_str(&format!(
                "{{\"type\":\"api-request\",\"shapeHash\":\"{turn:012x}\",\"params\":{{\"model\":\"claude-sonnet-4-5-20250929\",\"max_tokens\":32000,\"stream\":true}}}}\n"
            ));
        }
        for block in ["text", "tool_use"] {
            out.push_str(&format!(
                "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m{turn}\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[{{\"type\":\"{block}\",\"text\":\"{filler}\"}}],\"usage\":{{\"input_tokens\":10,\"output_tokens\":2}}}}}}\n"
            ));
        }
    }
    std::fs::write(path, out).expect("session file");
}

fn place() -> Place {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonicalize");
    let repo = root.join("home/someone/projects/app");
    let cwd = repo.join("src/server");
    let config_dir = root.join("home/someone/.claude");
    for d in [&cwd, &repo.join(".git/refs/heads"), &config_dir] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    std::fs::write(
        repo.join(".git/refs/heads/main"),
        "d2ee97700000000000000000000000000000beef\n",
    )
    .expect("ref");
    std::fs::write(repo.join("CLAUDE.md"), "Use the house style.\n").expect("CLAUDE.md");
    std::fs::write(config_dir.join("CLAUDE.md"), "Be brief.\n").expect("CLAUDE.md");
    for i in 0..PROJECTS {
        std::fs::create_dir_all(config_dir.join(format!("projects/-home-someone-projects-p{i}")))
            .expect("mkdir project");
    }
    let project = config_dir.join(format!("projects/-home-someone-projects-p{}", PROJECTS - 1));
    session_file(&project.join(format!("{SESSION_21}.jsonl")), 2 << 20, true);
    session_file(
        &project.join(format!("{SESSION_OLD}.jsonl")),
        5 << 20,
        false,
    );
    Place {
        _dir: dir,
        cwd: cwd.to_string_lossy().into_owned(),
        config_dir,
        cli: PathBuf::from(FAKE),
    }
}

/// The record cases, in the order they are timed.
const RECORD_CASES: [&str; 5] = [
    "A  row, the build before",
    "A' row alone, this schema",
    "B  row + totals (log_run)",
    "B' row + totals, UPSERT cached",
    "prev  previous_run (on a miss)",
];
const BEFORE: usize = 0;
const ROW_NOW: usize = 1;
const AFTER: usize = 2;
const AFTER_CACHED: usize = 3;

/// What one size's record cases measured (µs, per [`RECORD_CASES`]).
struct RecordFigures {
    size: usize,
    cases: Vec<Vec<f64>>,
    rows_end: i64,
    /// WAL pages a write adds: A, A', B.
    wal: [f64; 3],
}

/// WAL pages one write adds (the mean of `k`; autocheckpoint off meanwhile).
fn wal_pages(store: &Store, k: usize, mut write: impl FnMut()) -> f64 {
    let c = sqlite(store);
    c.pragma_update(None, "wal_autocheckpoint", 0)
        .expect("autocheckpoint off");
    checkpoint_truncate(store);
    for _ in 0..k {
        write();
    }
    let frames: i64 = c
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
        .expect("checkpoint");
    c.pragma_update(None, "wal_autocheckpoint", 128)
        .expect("autocheckpoint on");
    checkpoint_truncate(store);
    frames as f64 / k as f64
}

/// One size's four stores, copies of its seeded store (A's as the build
/// before had it), and the strings its timed turn borrows.
struct Stores {
    size: usize,
    _dirs: Vec<tempfile::TempDir>,
    before: Store,
    row_now: Store,
    after: Store,
    cached: Store,
    turn: Owned,
}

fn stores(size: usize, seeded: &Path) -> Stores {
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| copy_of(seeded)).collect();
    as_before(dirs[0].path());
    let open = |i: usize| Store::open_in(dirs[i].path()).expect("open store");
    Stores {
        size,
        before: open(0),
        row_now: open(1),
        after: open(2),
        cached: open(3),
        turn: owned(size / 2),
        _dirs: dirs,
    }
}

/// The five record cases of one size, timed.
fn record_cases<'a>(s: &'a Stores, old_row: &'a Run<'a>, new_row: &'a Run<'a>) -> Vec<Case<'a>> {
    vec![
        Box::new(move || {
            let t = Instant::now();
            s.before.begin_run(old_row).expect("begin_run");
            t.elapsed()
        }),
        Box::new(move || {
            let t = Instant::now();
            s.row_now.begin_run(new_row).expect("begin_run");
            t.elapsed()
        }),
        Box::new(move || {
            sqlite(&s.after).flush_prepared_statement_cache();
            let t = Instant::now();
            s.after.log_run(new_row).expect("log_run");
            t.elapsed()
        }),
        Box::new(move || {
            let t = Instant::now();
            s.cached.log_run(new_row).expect("log_run");
            t.elapsed()
        }),
        // On `row_now`, whose own writes use no cached statement: a turn
        // asks once, its statement cache empty.
        Box::new(move || {
            sqlite(&s.row_now).flush_prepared_statement_cache();
            let t = Instant::now();
            let found = s
                .row_now
                .previous_run(&s.turn.session, Some(i64::MAX))
                .expect("previous_run");
            let e = t.elapsed();
            assert!(found.is_some());
            e
        }),
    ]
}

/// Both sizes' cases interleaved in one loop, so that the sizes compare as
/// fairly as the cases.
fn record_all(n: usize, seeded: &[(usize, tempfile::TempDir)], p: &Prefix) -> Vec<RecordFigures> {
    let sets: Vec<Stores> = seeded
        .iter()
        .map(|(size, dir)| stores(*size, dir.path()))
        .collect();
    let rows_of: Vec<(Run, Run)> = sets
        .iter()
        .map(|s| {
            (
                timed_run(&s.turn, None, false),
                timed_run(&s.turn, Some(p), true),
            )
        })
        .collect();
    let mut cases: Vec<Case<'_>> = sets
        .iter()
        .zip(&rows_of)
        .flat_map(|(s, (old_row, new_row))| record_cases(s, old_row, new_row))
        .collect();
    let mut got = run_boxed_warm(n, 20, &mut cases).into_iter();
    drop(cases);
    sets.iter()
        .zip(&rows_of)
        .map(|(s, (old_row, new_row))| {
            let cases: Vec<Vec<f64>> = got.by_ref().take(RECORD_CASES.len()).collect();
            let rows_end = rows(&s.after, "runs");
            let wal = [
                wal_pages(&s.before, 100, || {
                    s.before.begin_run(old_row).expect("begin_run");
                }),
                wal_pages(&s.row_now, 100, || {
                    s.row_now.begin_run(new_row).expect("begin_run");
                }),
                wal_pages(&s.after, 100, || s.after.log_run(new_row).expect("log_run")),
            ];
            RecordFigures {
                size: s.size,
                cases,
                rows_end,
                wal,
            }
        })
        .collect()
}

/// Per size: (label, B − A paired median, B − A in means), µs.
fn record_section(seeded: &[(usize, tempfile::TempDir)], p: &Prefix) -> Vec<(String, f64, f64)> {
    let n: usize = env_or("BENCH_N_TURN", 2000);
    println!("\n## 1. A turn's record: the row alone (the build before) against the row and its totals\n");
    println!(
        "{n} reps a case, both sizes' cases interleaved in one loop (rotating order), each case on its own copy of its seeded store; µs."
    );
    println!("A = `begin_run`, the schema before (no runs_session index, no prefix): the build before's row.");
    println!("A' = `begin_run`, this schema, the row with its prefix: the row alone now.");
    println!("B = `log_run`: SAVEPOINT, the row, deltas, the totals' UPSERT prepared anew (a turn is one process).");
    println!("B' = the same, the UPSERT's statement cached.");
    println!("prev = `previous_run` (a cache miss only), statement prepared anew.\n");
    let fig = record_all(n, seeded, p);
    println!(
        "| {:<36} | {:>20} | {:>20} | {:>9} |",
        "case (p50 / p90 / mean, µs)",
        format!("{} turns", fig[0].size),
        format!("{} turns", fig.get(1).map_or(0, |f| f.size)),
        "ratio p50"
    );
    println!(
        "|{}|{}|{}|{}|",
        "-".repeat(38),
        "-".repeat(22),
        "-".repeat(22),
        "-".repeat(11)
    );
    for (c, label) in RECORD_CASES.iter().enumerate() {
        let cells: Vec<String> = fig
            .iter()
            .map(|f| {
                let v = &f.cases[c];
                format!(
                    "{:.1} / {:.1} / {:.1}",
                    quantile(v, 0.5),
                    quantile(v, 0.9),
                    mean(v)
                )
            })
            .collect();
        let ratio = match fig.as_slice() {
            [x, y] => format!(
                "{:.2}×",
                quantile(&y.cases[c], 0.5) / quantile(&x.cases[c], 0.5)
            ),
            _ => "—".into(),
        };
        println!(
            "| {label:<36} | {:>20} | {:>20} | {:>9} |",
            cells[0],
            cells.get(1).map_or("", String::as_str),
            ratio
        );
    }
    println!("\npaired medians (per-round differences), µs:");
    let mut added = Vec::new();
    for f in &fig {
        let k = &f.cases;
        let total = paired(&k[AFTER], &k[BEFORE]);
        println!(
            "  {:>6} turns: B − A {:+.1} (what the metrics add to the record; means {:+.1}) = schema (A' − A) {:+.1} + totals (B − A') {:+.1}; B' − A {:+.1}; stores grew to {} runs",
            f.size,
            total,
            mean(&k[AFTER]) - mean(&k[BEFORE]),
            paired(&k[ROW_NOW], &k[BEFORE]),
            paired(&k[AFTER], &k[ROW_NOW]),
            paired(&k[AFTER_CACHED], &k[BEFORE]),
            f.rows_end
        );
        println!(
            "          WAL pages a write (synchronous=NORMAL: no fsync but at checkpoints, every 128 pages): A {:.2}, A' {:.2}, B {:.2}",
            f.wal[0], f.wal[1], f.wal[2]
        );
        added.push((
            format!("{} turns", f.size),
            total,
            mean(&k[AFTER]) - mean(&k[BEFORE]),
        ));
    }
    added
}

/// p50s, µs: (deltas, timeline::now, prefix, the session file's part of a
/// typical turn: two `sessions::find` and one `last_request` of a 2.1 file).
fn pure_section(p: &Place) -> (f64, f64, f64, f64) {
    println!("\n## The rest of a turn's part, in process (µs a call; p50 / p90)\n");
    let o = owned(7);
    let pf = Prefix::default();
    let run = timed_run(&o, Some(&pf), true);
    let deltas = per_call(1000, 100, || {
        std::hint::black_box(claude_shim::store::totals::deltas(
            std::hint::black_box(&run),
            "sqlite",
        ));
    });
    let now = per_call(1000, 1000, || {
        std::hint::black_box(claude_shim::timeline::now());
    });
    let args: Vec<OsString> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "sonnet",
        "--append-system-prompt",
        "Answer in one paragraph.",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let model_env = claude_shim::env::cli_model();
    let prefix = per_call(2000, 1, || {
        std::hint::black_box(claude_shim::turn::cache::prefix(
            &args,
            model_env.as_deref(),
            None,
        ));
    });
    let parts = per_call(1000, 100, || {
        std::hint::black_box(part([b"sonnet".as_slice(), b"model".as_slice()]));
    });
    use claude_shim::sessions;
    let find = per_call(1000, 10, || {
        std::hint::black_box(sessions::find(&p.config_dir, SESSION_21).expect("found"));
    });
    let file_21 = sessions::find(&p.config_dir, SESSION_21).expect("found");
    let file_old = sessions::find(&p.config_dir, SESSION_OLD).expect("found");
    assert!(sessions::last_request(&file_21).is_some());
    assert!(sessions::last_request(&file_old).is_none());
    let last_21 = per_call(1000, 1, || {
        std::hint::black_box(sessions::last_request(&file_21));
    });
    let last_old = per_call(200, 1, || {
        std::hint::black_box(sessions::last_request(&file_old));
    });
    let depth = Path::new(&p.cwd).ancestors().count();
    let show = |label: &str, v: &[f64]| {
        println!(
            "  {label:<72} {:>8.2} {:>8.2}",
            quantile(v, 0.5),
            quantile(v, 0.9)
        )
    };
    let count = claude_shim::store::totals::deltas(&run, "sqlite").len();
    show(
        &format!("store::totals::deltas (a resumed warm turn: {count} deltas; inside B)"),
        &deltas,
    );
    show("timeline::now()", &now);
    show(
        &format!("turn::cache::prefix (2.1: flags only; cwd {depth} levels deep)"),
        &prefix,
    );
    show("  of which cache_miss::part, one of its hashes", &parts);
    show(
        &format!(
            "sessions::find (the turn's file among {PROJECTS} project dirs; twice a resumed turn)"
        ),
        &find,
    );
    show(
        "sessions::last_request, a 2 MiB 2.1 session (its record in the last 64 KiB)",
        &last_21,
    );
    show(
        "sessions::last_request, a 5 MiB session without one (reads its last 64 KiB)",
        &last_old,
    );
    (
        quantile(&deltas, 0.5),
        quantile(&now, 0.5),
        quantile(&prefix, 0.5),
        quantile(&find, 0.5) + quantile(&last_21, 0.5),
    )
}

// ---------------------------------------------------------------- scrapes

/// `claude-shim metrics --serve` on a free loopback port over `home`.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(home: &Path, scratch: &Path) -> Option<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(shim_exe())
        .args(["metrics", "--serve", &addr])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", scratch)
        .env("CLAUDE_SHIM_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let server = Server { child, addr };
    line.contains("serving").then_some(server)
}

/// What Prometheus sends as `Accept`.
const ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One GET of `path` as Prometheus makes it (keep-alive: the answer read to
/// its Content-Length, not to the server's close); the body's length.
fn get(addr: &str, path: &str) -> usize {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: {ACCEPT}\r\n\r\n"
    )
    .expect("request");
    let mut buf = Vec::with_capacity(64 << 10);
    let mut chunk = [0u8; 16 << 10];
    let (head, want) = loop {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed before the headers");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .expect("a Content-Length");
            break (end + 4, len);
        }
    };
    while buf.len() < head + want {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed before the body's end");
        buf.extend_from_slice(&chunk[..n]);
    }
    want
}

fn scrape_section(seeded: &[(usize, tempfile::TempDir)]) -> Vec<(String, f64, f64)> {
    let n: usize = env_or("BENCH_N_SCRAPE", 200);
    println!("\n## 2. A scrape, by turns in the store\n");
    println!("{n} scrapes a size and case, the sizes interleaved; µs (p50 / p90).");
    let stores: Vec<Store> = seeded
        .iter()
        .map(|(_, d)| Store::open_in(d.path()).expect("open"))
        .collect();
    for ((size, _), s) in seeded.iter().zip(&stores) {
        println!(
            "  {size} turns: {} runs rows, {} metric_totals rows, {:.1} MiB",
            rows(s, "runs"),
            rows(s, "metric_totals"),
            std::fs::metadata(s.path.as_path()).map_or(0.0, |m| m.len() as f64 / 1048576.0)
        );
    }
    let mut results: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    // Store reads (the statements cached, as the endpoint's open store has them).
    let mut cases: Vec<Case<'_>> = stores
        .iter()
        .map(|s| {
            Box::new(move || {
                let t = Instant::now();
                let totals = s.totals().expect("totals");
                let versions = s.cli_versions().expect("versions");
                let e = t.elapsed();
                std::hint::black_box((totals, versions));
                e
            }) as Case<'_>
        })
        .collect();
    results.push((
        "Store::totals + cli_versions".into(),
        run_boxed(n, &mut cases),
    ));
    let snaps: Vec<Snapshot> = stores
        .iter()
        .map(|s| Snapshot {
            totals: Some(s.totals().expect("totals")),
            keeper: None,
            cli_versions: s.cli_versions().expect("versions"),
        })
        .collect();
    let text_len: Vec<usize> = snaps
        .iter()
        .map(|s| exposition::render(s, Format::Openmetrics).len())
        .collect();
    let mut cases: Vec<Case<'_>> = snaps
        .iter()
        .map(|s| {
            Box::new(move || {
                let t = Instant::now();
                std::hint::black_box(exposition::render(s, Format::Openmetrics));
                t.elapsed()
            }) as Case<'_>
        })
        .collect();
    results.push(("exposition::render".into(), run_boxed(n, &mut cases)));
    // The endpoint's own path: `Source` (store kept open; the keeper asked,
    // none runs) and the text. The data dir is read from the environment.
    let mut sources: Vec<Source> = seeded
        .iter()
        .map(|(_, d)| {
            std::env::set_var("CLAUDE_SHIM_HOME", d.path());
            let mut src = Source::default();
            let snap = src.snapshot();
            assert!(
                snap.totals.as_ref().is_some_and(|t| !t.is_empty()),
                "no totals read"
            );
            src
        })
        .collect();
    let mut cases: Vec<Case<'_>> = sources
        .iter_mut()
        .map(|src| {
            Box::new(move || {
                let t = Instant::now();
                std::hint::black_box(exposition::render(&src.snapshot(), Format::Openmetrics));
                t.elapsed()
            }) as Case<'_>
        })
        .collect();
    results.push(("Source::snapshot + render".into(), run_boxed(n, &mut cases)));
    drop(cases);
    drop(sources);
    let scratch = tempfile::tempdir().expect("tempdir");
    let servers: Vec<Option<Server>> = seeded
        .iter()
        .map(|(_, d)| serve(d.path(), scratch.path()))
        .collect();
    if servers.iter().all(Option::is_some) {
        for (label, path) in [
            ("HTTP GET /metrics (`metrics --serve`)", "/metrics"),
            ("  HTTP GET / (the endpoint's floor)", "/"),
        ] {
            let mut cases: Vec<Case<'_>> = servers
                .iter()
                .flatten()
                .map(|s| {
                    let addr = s.addr.clone();
                    Box::new(move || {
                        let t = Instant::now();
                        std::hint::black_box(get(&addr, path));
                        t.elapsed()
                    }) as Case<'_>
                })
                .collect();
            results.push((label.into(), run_boxed(n, &mut cases)));
        }
    } else {
        println!("  (`claude-shim metrics --serve` did not start: no HTTP figures)");
    }
    drop(servers);
    // What the running totals spare: counting the log at each scrape.
    let mut cases: Vec<Case<'_>> = stores
        .iter()
        .map(|s| {
            Box::new(move || {
                let t = Instant::now();
                std::hint::black_box(s.run_counts().expect("run_counts"));
                t.elapsed()
            }) as Case<'_>
        })
        .collect();
    results.push((
        "ref: run_counts (GROUP BY over runs)".into(),
        run_boxed(n, &mut cases),
    ));

    println!(
        "  exposition text: {} bytes",
        text_len
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!();
    let sizes: Vec<usize> = seeded.iter().map(|(s, _)| *s).collect();
    println!(
        "| {:<40} | {:>17} | {:>17} | {:>9} |",
        "scrape (p50 / p90, µs)",
        format!("{} turns", sizes[0]),
        format!("{} turns", sizes.get(1).copied().unwrap_or(0)),
        "ratio p50"
    );
    println!(
        "|{}|{}|{}|{}|",
        "-".repeat(42),
        "-".repeat(19),
        "-".repeat(19),
        "-".repeat(11)
    );
    let mut out = Vec::new();
    for (label, v) in &results {
        let cells: Vec<String> = v
            .iter()
            .map(|s| format!("{:.1} / {:.1}", quantile(s, 0.5), quantile(s, 0.9)))
            .collect();
        let (small, large) = (
            quantile(&v[0], 0.5),
            v.get(1).map_or(f64::NAN, |s| quantile(s, 0.5)),
        );
        println!(
            "| {label:<40} | {:>17} | {:>17} | {:>8.2}× |",
            cells[0],
            cells.get(1).map_or("", String::as_str),
            large / small
        );
        out.push((label.clone(), small, large));
    }
    out
}

/// A timed case over borrowed state.
type Case<'a> = Box<dyn FnMut() -> Duration + 'a>;

fn run_boxed(n: usize, cases: &mut [Case<'_>]) -> Vec<Vec<f64>> {
    run_boxed_warm(n, 5, cases)
}

fn run_boxed_warm(n: usize, warm: usize, cases: &mut [Case<'_>]) -> Vec<Vec<f64>> {
    let mut refs: Vec<&mut dyn FnMut() -> Duration> = cases
        .iter_mut()
        .map(|c| c.as_mut() as &mut dyn FnMut() -> Duration)
        .collect();
    interleave(n, warm, &mut refs)
}

// ---------------------------------------------------------------- processes

/// `claude` → `exe`, with its own data dir.
struct Build {
    claude: PathBuf,
    shim_home: PathBuf,
}

fn build_in(root: &Path, name: &str, exe: &Path) -> Build {
    let bin = root.join(name).join("bin");
    let shim_home = root.join(name).join("shim-home");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::create_dir_all(&shim_home).expect("mkdir");
    std::fs::set_permissions(
        &shim_home,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let claude = bin.join("claude");
    symlink(exe, &claude).expect("link");
    Build { claude, shim_home }
}

/// Per case: (label, p50 this / before / direct, paired this − before,
/// this − before in means), ms.
fn process_section() -> Vec<(String, [f64; 3], f64, f64)> {
    let n: usize = env_or("BENCH_N", 400);
    println!("\n## 3. Whole processes: this build, the build before, the CLI directly\n");
    let Some(prev) = prev_exe() else {
        println!(
            "(no build before: set BENCH_PREV_SHIM, or build /tmp/prev; see this file's head)"
        );
        return Vec::new();
    };
    println!("this build:       {}", shim_exe().display());
    println!("the build before: {}", prev.display());
    println!("{n} runs a side, interleaved (rotating order); ms.\n");
    let dir = tempfile::Builder::new()
        .prefix("claude-shim-metrics.")
        .tempdir()
        .expect("tempdir");
    let root = dir.path().canonicalize().expect("canonicalize");
    let (home, work) = (root.join("home"), root.join("work"));
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::create_dir_all(&work).expect("mkdir");
    let builds = [
        build_in(&root, "new", &shim_exe()),
        build_in(&root, "prev", &prev),
    ];
    let prompt = root.join("prompt-1k.txt");
    std::fs::write(&prompt, setup::transcript("fresh", 1 << 10).text).expect("prompt");
    let true_bin = PathBuf::from("/bin/true");
    let fake = PathBuf::from(FAKE);
    let cmd = |program: &Path, shim_home: &Path, real: &Path, managed: bool| {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("LANG", "C.UTF-8")
            .env("CLAUDE_SHIM_REAL", real)
            .env("CLAUDE_SHIM_WARM", "0")
            .env("CLAUDE_SHIM_HOME", shim_home)
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if managed {
            c.args(setup::MANAGED_ARGS).envs(setup::fake_env("run"));
        } else {
            c.arg("--version");
        }
        c
    };
    let mut out = Vec::new();
    println!(
        "| {:<44} | {:>8} | {:>8} | {:>8} | {:>10} | {:>10} | {:>11} | {:>11} |",
        "case (p50, ms)",
        "this",
        "before",
        "direct",
        "this−dir",
        "before−dir",
        "this−before",
        "(in means)"
    );
    println!(
        "|{}|{}",
        "-".repeat(46),
        "----------|".repeat(3) + &"------------|".repeat(2) + &"-------------|".repeat(2)
    );
    for (label, real, managed, stdin) in [
        (
            "pass-through `claude --version` (/bin/true)",
            &true_bin,
            false,
            None,
        ),
        (
            "fresh managed `-p` turn, 1 KiB (fake CLI)",
            &fake,
            true,
            Some(prompt.as_path()),
        ),
    ] {
        let direct_home = root.join("direct-home");
        let mut this = || {
            measure::wall(
                cmd(
                    builds[0].claude.as_path(),
                    builds[0].shim_home.as_path(),
                    real.as_path(),
                    managed,
                ),
                stdin,
            )
        };
        let mut before = || {
            measure::wall(
                cmd(
                    builds[1].claude.as_path(),
                    builds[1].shim_home.as_path(),
                    real.as_path(),
                    managed,
                ),
                stdin,
            )
        };
        let mut direct = || {
            measure::wall(
                cmd(
                    real.as_path(),
                    direct_home.as_path(),
                    real.as_path(),
                    managed,
                ),
                stdin,
            )
        };
        let got = interleave(n, 5, &mut [&mut this, &mut before, &mut direct]);
        let ms: Vec<Vec<f64>> = got
            .iter()
            .map(|v| v.iter().map(|x| x / 1e3).collect())
            .collect();
        let p50 = [
            quantile(&ms[0], 0.5),
            quantile(&ms[1], 0.5),
            quantile(&ms[2], 0.5),
        ];
        let (new_d, old_d, new_old) = (
            paired(&ms[0], &ms[2]),
            paired(&ms[1], &ms[2]),
            paired(&ms[0], &ms[1]),
        );
        let in_means = mean(&ms[0]) - mean(&ms[1]);
        println!(
            "| {label:<44} | {:>8.2} | {:>8.2} | {:>8.2} | {:>+10.2} | {:>+10.2} | {:>+11.3} | {:>+11.3} |",
            p50[0], p50[1], p50[2], new_d, old_d, new_old, in_means
        );
        out.push((label.to_owned(), p50, new_old, in_means));
    }
    println!("\n(differences are medians of per-round pairs; \"in means\": the difference of the means, checkpoints and spikes included)");
    out
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000]);
    let only = std::env::var("BENCH_ONLY").unwrap_or_else(|_| "record,scrape,process".into());
    let on = |s: &str| only.split(',').any(|o| o.trim() == s);
    let date = Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!("# claude-shim metrics (issue 36): what they cost, side by side\n");
    println!("{date}; {}", machine());
    let load_start = load();
    println!("load average at the start: {load_start}");

    let place = place();
    let args: Vec<OsString> = ["-p", "--model", "sonnet"]
        .iter()
        .map(OsString::from)
        .collect();
    let prefix = claude_shim::turn::cache::prefix(
        &args,
        None,
        Some((&place.cli, &place.config_dir, &place.cwd)),
    );
    let mut seeded: Vec<(usize, tempfile::TempDir)> = Vec::new();
    if on("record") || on("scrape") {
        for &size in &sizes {
            let dir = tempfile::Builder::new()
                .prefix("claude-shim-metrics.")
                .tempdir()
                .expect("tempdir");
            let took = seed(dir.path(), size, &prefix);
            println!(
                "seeded {size} turns through log_run in {:.1} s",
                took.as_secs_f64()
            );
            seeded.push((size, dir));
        }
    }
    let mut summary = Vec::new();
    if on("record") {
        let added = record_section(&seeded, &prefix);
        let (deltas, now, pfx, file) = pure_section(&place);
        let most = |f: fn(&(String, f64, f64)) -> f64| added.iter().map(f).fold(f64::NAN, f64::max);
        let (p50, means) = (most(|a| a.1), most(|a| a.2));
        for (what, record) in [("medians", p50), ("means (checkpoints amortised)", means)] {
            let per_turn = record + now + pfx + file;
            summary.push(format!(
                "what the metrics add to a turn, by {what}: record (B − A) {} + prefix {pfx:.1} + session file (find, last_request) {file:.1} + timeline::now {now:.2} = {per_turn:.0} µs at most ({:.3} ms; goal ≤ 0.2 ms: {}); deltas {deltas:.1} µs of it is inside B",
                added
                    .iter()
                    .map(|(s, a, m)| format!("{:+.1} µs ({s})", if what == "medians" { *a } else { *m }))
                    .collect::<Vec<_>>()
                    .join(", "),
                per_turn / 1e3,
                if per_turn <= 200.0 { "met" } else { "not met" }
            ));
        }
    }
    if on("scrape") {
        for (label, small, large) in scrape_section(&seeded) {
            summary.push(format!(
                "scrape, {label}: {small:.0} µs → {large:.0} µs ({:.2}×)",
                large / small
            ));
        }
    }
    if on("process") {
        for (label, p50, paired, in_means) in process_section() {
            summary.push(format!(
                "{label}: this build {:.2} ms, the build before {:.2} ms (direct {:.2}); this − before {paired:+.3} ms paired, {in_means:+.3} ms in means",
                p50[0], p50[1], p50[2]
            ));
        }
    }
    println!("\n## Summary\n");
    for s in &summary {
        println!("- {s}");
    }
    println!(
        "\nload average: {load_start} at the start, {} at the end",
        load()
    );
}
