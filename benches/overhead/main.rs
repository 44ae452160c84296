//! What the shim costs a caller, measured against the same minimal fake CLI
//! run directly, side by side in one run. Prints figures; asserts nothing.
//!
//! - wall time per invocation, pass-through / fresh-managed / resumed-managed,
//!   with 1 KiB, 100 KiB and 1 MiB prompts (Human:/Assistant: transcripts on
//!   stdin), the database holding 100k pins; shim and direct runs interleaved;
//! - time to first stdout byte;
//! - stdout throughput through the shim's tee vs a plain pipe, 1 GiB;
//! - peak RSS, from GNU time (`/usr/bin/time -f %M`): the largest of the
//!   process and the children it waited for, so the fake is counted too (its
//!   own figure is listed).
//!
//! Run: `cargo bench --bench overhead`
//!
//! - `BENCH_N` — runs per side and case (default 100);
//! - `BENCH_PINS` — pins seeded into the database (default 100000);
//! - `BENCH_TEE_BYTES` — bytes per throughput run (default 1 GiB);
//! - `BENCH_TEE_REPS` — throughput runs per side (default 5);
//! - `BENCH_ONLY` — comma-separated sections: wall, ttfb, tee, rss;
//! - `BENCH_KEEP` — keep the set-up directory (and an `env.sh`) for profiling;
//! - `BENCH_SHIM` — another claude-shim binary to measure (e.g. a static build).
//!
//! The fake CLI is the tests' (`tests/fixtures/fake-claude/`, compiled, so
//! no interpreter start-up blurs the figures), told by its knobs
//! ([`setup::fake_env`]) to answer like a minimal CLI: the shim's
//! `--version`/`--help` probe at once; a turn reads its prompt and prints
//! what the real CLI would (text, or stream-json init + assistant + result
//! naming the session it was given by `--resume`/`--session-id`, with the
//! seeded pins' assistant uuid), leaving every session file as it was, so
//! each resumed run resumes the same head; throughput runs print a flood.
//!
//! Modules: `setup` (sandbox, prompts, seeded store, the fake's knobs),
//! `measure` (interleaved timing, tables), `phases` (in-process steps). The
//! timed cases are data: [`wall_rows`], [`ttfb_rows`], [`TEE`], [`RSS`].

/// The shim under test: `BENCH_SHIM`, else the one cargo built.
fn shim_exe() -> PathBuf {
    std::env::var_os("BENCH_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-shim")))
}
/// GNU time, for peak RSS (`apt-get install time`).
const TIME: &str = "/usr/bin/time";
/// The fake CLI.
const FAKE: &str = env!("CARGO_BIN_EXE_fake-claude");
/// The assistant message uuid every fake reply carries; seeded pins end at it
/// and the session files name it last, so a resumed turn stays the head.
const ASSISTANT_UUID: &str = "5e1f0000-0000-4000-8000-00000000a551";
/// The session id of the stream-json lines the observer phase reads.
const DIRECT_SESSION: &str = "d1000000-0000-4000-8000-000000000001";
const REPLY_BYTES: usize = 1500;
const SIZES: [(&str, usize); 3] = [
    ("1 KiB", 1 << 10),
    ("100 KiB", 100 << 10),
    ("1 MiB", 1 << 20),
];

mod measure;
mod phases;
mod setup;

use measure::{compare_in, drain, env_or, first_byte, header, machine, quantile, row, wall};
use setup::{
    fake_env, flood_var, seed_pins, seed_resumable, transcript, Case, Setup, MANAGED_ARGS,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One timed row: `claude ARGS` with a prompt on stdin, through the shim and
/// directly, the fake in `mode` (`run`, or `ttfb`: a pause after its first line).
struct Row<'a> {
    label: String,
    mode: &'static str,
    args: &'static [&'static str],
    prompt: Option<&'a Path>,
}

fn row_of<'a>(
    label: impl Into<String>,
    mode: &'static str,
    args: &'static [&'static str],
    prompt: Option<&'a Path>,
) -> Row<'a> {
    Row {
        label: label.into(),
        mode,
        args,
        prompt,
    }
}

/// Wall time per invocation: pass-through, fresh and resumed, at each size.
fn wall_rows(cases: &[Case]) -> Vec<Row<'_>> {
    let mut rows = vec![row_of(
        "pass-through `claude --version`",
        "run",
        &["--version"],
        None,
    )];
    for c in cases {
        rows.push(row_of(
            format!("pass-through, {} on stdin", c.label),
            "run",
            &[],
            Some(&c.fresh),
        ));
    }
    for c in cases {
        rows.push(row_of(
            format!("fresh-managed, {}", c.label),
            "run",
            MANAGED_ARGS,
            Some(&c.fresh),
        ));
    }
    for c in cases {
        rows.push(row_of(
            format!("resumed-managed, {}", c.label),
            "run",
            MANAGED_ARGS,
            Some(&c.resumed),
        ));
    }
    rows
}

/// Time to the first stdout byte, 1 KiB prompt.
fn ttfb_rows(c: &Case) -> Vec<Row<'_>> {
    const TEXT: &[&str] = &["-p"];
    vec![
        row_of("pass-through", "ttfb", &[], Some(&c.fresh)),
        row_of("fresh-managed, text", "ttfb", TEXT, Some(&c.fresh)),
        row_of(
            "fresh-managed, stream-json",
            "ttfb",
            MANAGED_ARGS,
            Some(&c.fresh),
        ),
        row_of(
            "resumed-managed, stream-json",
            "ttfb",
            MANAGED_ARGS,
            Some(&c.resumed),
        ),
        row_of(
            "resumed-managed, text (held to exit)",
            "ttfb",
            TEXT,
            Some(&c.resumed),
        ),
    ]
}

/// Each row, shim and direct interleaved, timed by `measure`.
/// Each row's comparison, printed as it is measured; returned by label.
fn table(
    s: &Setup,
    n: usize,
    rows: &[Row],
    measure: fn(std::process::Command, Option<&Path>) -> Duration,
) -> Vec<(String, f64)> {
    let mut paired = Vec::new();
    for r in rows {
        let c = compare_in(
            s,
            n,
            || measure(s.command(true, r.mode, r.args), r.prompt),
            || measure(s.command(false, r.mode, r.args), r.prompt),
        );
        row(&r.label, &c);
        paired.push((r.label.clone(), c.paired));
    }
    paired
}

/// Issue 30's goal for a 1 MiB transcript's cold managed turn, beside the
/// figures just measured (Δ paired).
const MIB_GOAL_MS: f64 = 5.0;

fn mib_goal(paired: &[(String, f64)]) {
    println!("\ngoal: a 1 MiB transcript's cold managed turn adds <= +{MIB_GOAL_MS:.0} ms over the fake run directly:");
    for kind in ["fresh-managed", "resumed-managed"] {
        let label = format!("{kind}, 1 MiB");
        if let Some((_, d)) = paired.iter().find(|(l, _)| *l == label) {
            let verdict = if *d <= MIB_GOAL_MS { "met" } else { "not met" };
            println!("  {label}: {d:+.2} ms, {verdict}");
        }
    }
    println!("  load average now: {}", machine());
}

/// Throughput paths: (label, through the shim, fake mode, args).
const TEE: [(&str, bool, &str, &[&str]); 5] = [
    ("plain pipe: fake → reader (text)", false, "bytes", &["-p"]),
    ("shim managed `-p` (text), tee", true, "bytes", &["-p"]),
    ("pass-through (exec), text", true, "bytes", &[]),
    (
        "plain pipe: fake → reader (stream-json lines)",
        false,
        "lines",
        MANAGED_ARGS,
    ),
    (
        "shim managed, stream-json lines, tee + parse",
        true,
        "lines",
        MANAGED_ARGS,
    ),
];

/// Peak RSS columns: (through the shim, args, the resumed prompt).
const RSS: [(bool, &[&str], bool); 4] = [
    (true, &[], false),
    (true, MANAGED_ARGS, false),
    (true, MANAGED_ARGS, true),
    (false, MANAGED_ARGS, false),
];

fn main() {
    let n: usize = env_or("BENCH_N", 100usize).max(1);
    let pins: usize = env_or("BENCH_PINS", 100_000usize);
    let tee_bytes: u64 = env_or("BENCH_TEE_BYTES", 1u64 << 30);
    let tee_reps: usize = env_or("BENCH_TEE_REPS", 5usize).max(1);
    let only: Option<Vec<String>> = std::env::var("BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let want = |s: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == s));

    let s = Setup::new();
    if std::env::var_os("BENCH_KEEP").is_some() {
        keep(&s);
    }
    println!("claude-shim overhead: {}", shim_exe().display());
    println!("machine: {}", machine());
    let took = seed_pins(&s, pins);
    let db_size = std::fs::metadata(s.shim_home.join("shim.db")).map_or(0, |m| m.len());
    println!(
        "database: {pins} pins seeded in {:.1} s ({:.1} MiB)",
        took.as_secs_f64(),
        db_size as f64 / 1048576.0
    );
    let cases = prompts(&s);
    let tiny = s.write_prompt("hi.txt", "hi");
    println!("N = {n} runs per side, interleaved; times in ms\n");

    if want("wall") {
        println!("### Wall time per invocation (shim vs the fake run directly)\n");
        header("case");
        let paired = table(&s, n, &wall_rows(&cases), wall);
        println!(
            "\nΔ p50 = shim median − direct median; Δ paired = median over pairs of (shim − direct).\n\
             Resumed: the shim sends the fake only the new message; direct, the fake reads the whole prompt."
        );
        mib_goal(&paired);
    }
    if want("ttfb") {
        println!(
            "\n### Time to first stdout byte (the fake prints its first line, then waits 50 ms)\n"
        );
        header("case (1 KiB prompt)");
        table(&s, n, &ttfb_rows(&cases[0]), first_byte);
    }
    if want("tee") {
        tee(&s, &tiny, tee_bytes, tee_reps);
    }
    if want("phases") {
        phases::phases(&s, &cases, n);
    }
    if want("rss") {
        rss(&s, &cases);
    }
    summary(&s);
    if std::env::var_os("BENCH_KEEP").is_some() {
        std::mem::forget(s);
    }
}

/// For profiling by hand: the set-up stays, with an env file to source.
fn keep(s: &Setup) {
    let envf = s.root.join("env.sh");
    let knobs: String = fake_env("run")
        .iter()
        .map(|(k, v)| format!(" {k}='{v}'"))
        .collect();
    let text = format!(
        // The same environment as the timed runs' (`Setup::env`): cold turns.
        "export PATH=/usr/bin:/bin LANG=C.UTF-8 CLAUDE_SHIM_WARM=0 HOME={h} CLAUDE_SHIM_REAL={f} CLAUDE_SHIM_HOME={sh}{knobs}\ncd {w}\n# {c} -p --output-format stream-json --verbose < {r}/resumed-1048576.txt\n",
        h = s.home.display(),
        f = s.fake.display(),
        sh = s.shim_home.display(),
        w = s.work.display(),
        c = s.claude.display(),
        r = s.root.display()
    );
    std::fs::write(&envf, text).expect("env file");
    println!("keeping {} (source {})", s.root.display(), envf.display());
}

/// Per size, one transcript that is pinned (resumed) and one that is not
/// (fresh); both the same shape and size.
fn prompts(s: &Setup) -> Vec<Case> {
    let mut cases = Vec::new();
    for (label, size) in SIZES {
        let fresh = transcript("fresh", size);
        let resumed = transcript("resumed", size);
        let fresh_path = s.write_prompt(&format!("fresh-{size}.txt"), &fresh.text);
        let resumed_path = s.write_prompt(&format!("resumed-{size}.txt"), &resumed.text);
        seed_resumable(s, &resumed, &resumed_path);
        println!(
            "prompt {label}: {} B, {} prior turns (fresh), {} B (resumed)",
            fresh.text.len(),
            fresh.users.len(),
            resumed.text.len()
        );
        cases.push(Case {
            label,
            size,
            fresh: fresh_path,
            resumed: resumed_path,
            users: resumed.users,
        });
    }
    cases
}

fn tee(s: &Setup, tiny: &Path, tee_bytes: u64, tee_reps: usize) {
    println!(
        "\n### Stdout throughput, {:.2} GiB per run, {tee_reps} runs per side, interleaved\n",
        tee_bytes as f64 / (1u64 << 30) as f64
    );
    println!(
        "| {:<44} | {:>9} | {:>9} | {:>9} | {:>8} |",
        "path", "GB/s p50", "GB/s min", "GB/s max", "RSS MiB"
    );
    println!(
        "|{}|{}|{}|{}|{}|",
        "-".repeat(46),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(10)
    );
    let mut results: Vec<Vec<(f64, i64)>> = vec![Vec::new(); TEE.len()];
    for _ in 0..tee_reps {
        for (k, (_, shim, mode, args)) in TEE.iter().enumerate() {
            let mut cmd = s.timed(*shim, mode, args);
            cmd.env(flood_var(mode), tee_bytes.to_string());
            let (got, t) = drain(cmd, Some(tiny));
            assert_eq!(got, tee_bytes, "variant {k}: bytes through");
            results[k].push((got as f64 / t.as_secs_f64() / 1e9, s.last_rss()));
        }
    }
    let mut p50s = Vec::new();
    for ((label, ..), r) in TEE.iter().zip(&results) {
        let rates: Vec<f64> = r.iter().map(|x| x.0).collect();
        let rss = r.iter().map(|x| x.1).max().unwrap_or(0);
        let p50 = quantile(&rates, 0.5);
        p50s.push(p50);
        println!(
            "| {label:<44} | {p50:>9.2} | {:>9.2} | {:>9.2} | {:>8.1} |",
            quantile(&rates, 0.0),
            quantile(&rates, 1.0),
            rss as f64 / 1024.0
        );
    }
    println!(
        "\ntee / plain pipe: text {:.0}%, stream-json {:.0}%",
        p50s[1] / p50s[0] * 100.0,
        p50s[4] / p50s[3] * 100.0
    );
}

fn rss(s: &Setup, cases: &[Case]) {
    println!("\n### Peak RSS (MiB, max of 5 runs; target 16 MiB + 2 × prompt)\n");
    println!(
        "| {:<10} | {:>12} | {:>13} | {:>15} | {:>11} | {:>8} |",
        "prompt", "pass-through", "fresh-managed", "resumed-managed", "fake direct", "target"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|",
        "-".repeat(12),
        "-".repeat(14),
        "-".repeat(15),
        "-".repeat(17),
        "-".repeat(13),
        "-".repeat(10)
    );
    for c in cases {
        let peak = |(shim, args, resumed): (bool, &[&str], bool)| {
            let p = if resumed { &c.resumed } else { &c.fresh };
            (0..5)
                .map(|_| {
                    wall(s.timed(shim, "run", args), Some(p));
                    s.last_rss()
                })
                .max()
                .unwrap_or(0) as f64
                / 1024.0
        };
        let [a, b, d, e] = RSS.map(peak);
        println!(
            "| {:<10} | {a:>12.1} | {b:>13.1} | {d:>15.1} | {e:>11.1} | {:>8.1} |",
            c.label,
            16.0 + 2.0 * c.size as f64 / 1048576.0
        );
    }
}

/// How the shim ran the managed turns (a check that the cases were what
/// their names say).
fn summary(s: &Setup) {
    let db = s.db();
    let mut stmt = db
        .prepare("SELECT kind, count(*) FROM runs GROUP BY kind ORDER BY kind")
        .expect("runs");
    let kinds: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} {}",
                r.get::<_, i64>(1)?,
                r.get::<_, String>(0)?
            ))
        })
        .expect("runs")
        .collect::<rusqlite::Result<_>>()
        .expect("runs");
    let pins_now: i64 = db
        .query_row("SELECT count(*) FROM pins", [], |r| r.get(0))
        .expect("count");
    println!(
        "\nmanaged runs by kind: {}; pins now {pins_now}",
        kinds.join(", ")
    );
    let errors = s.shim_home.join("errors.log");
    if let Ok(text) = std::fs::read_to_string(&errors) {
        println!("errors.log:\n{text}");
    }
    println!("machine at the end: {}", machine());
}
