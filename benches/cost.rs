//! Token economics: N-turn conversations through the REAL Claude Code CLI
//! against the loopback Messages-API server (which models prompt caching on
//! the exact request bytes: plain 1×, cache writes 1.25×, cache reads 0.1×),
//! in several client dialects, three ways side by side:
//!
//! - replay: the client re-sends the whole transcript each turn, no shim (today);
//! - shim:   the same client, byte for byte, with the shim on PATH;
//! - native: a client that resumes its session itself (`--session-id`, then
//!   `--resume`) and sends only the new message (the limit).
//!
//! Prints per-turn and total figures per dialect and a summary (with what
//! `claude-shim stats` estimates the shim saved beside the true saving: the
//! replay way's dollars less the shim way's, as the CLI priced the server's
//! usage), writes
//! `docs/bench/cost.csv` (every turn, way and dialect: request bytes, plain
//! input, cache writes, cache reads, billed-equivalent input tokens) and
//! `docs/bench/cost.svg` (billed-equivalent per turn, one panel per dialect).
//!
//! Run: `.ci/install-cli && cargo bench --bench cost`
//!
//! - `BENCH_TURNS` — turns per conversation (default 30);
//! - `BENCH_DIALECTS` — comma-separated names (default: the four below; `all`
//!   adds the other renderings of `tests/support/clients.rs`; `streamlines`
//!   cannot be replayed without the shim: the real CLI refuses a stream-json
//!   line with the assistant role, so its replay way fails from turn 2);
//! - `BENCH_JOBS` — conversations run at once (default 3: the three ways of
//!   one dialect; figures do not depend on it, each way has its own server);
//! - `BENCH_OUT` — output directory (default `docs/bench`);
//! - `BENCH_DUMP` — a directory to write every request body into;
//! - `BENCH_REDRAW` — only redraw `cost.svg` from `cost.csv` (no runs).

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use support::clients::{self, user_line, Client};
use support::figures::env_or;
use support::{describe, run, ApiServer, LoggedRequest, Sandbox};

const REPLY_BYTES: usize = 1500;
const USER_BYTES: usize = 300;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Way {
    Replay,
    Shim,
    Native,
}

const WAYS: [Way; 3] = [Way::Replay, Way::Shim, Way::Native];

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Replay => "replay",
            Way::Shim => "shim",
            Way::Native => "native",
        }
    }
}

/// One client of `tests/support/clients.rs`, and what it would send if it
/// resumed natively.
struct Dialect {
    name: &'static str,
    what: &'static str,
    client: Client,
    /// The prompt of a native client: only the new message (same flags, same channel).
    native: fn(&str) -> String,
}

/// The message as it is.
fn bare(cur: &str) -> String {
    cur.to_owned()
}

/// The message as one stream-json input line.
fn line(cur: &str) -> String {
    format!("{}\n", user_line(cur, "user"))
}

fn dialects() -> Vec<Dialect> {
    let d = |name, what, client, native| Dialect {
        name,
        what,
        client,
        native,
    };
    vec![
        d(
            "human",
            "Human:/Assistant: on stdin, text output (OpenAI-compatible wrapper)",
            Client::Wrapper,
            bare,
        ),
        d(
            "langchain",
            "User:/Assistant: positional, stream-json output (LangChain-style)",
            Client::LangChain,
            bare,
        ),
        d(
            "opendesign",
            "markdown headings in one stream-json input line (Open Design)",
            Client::OpenDesign,
            line,
        ),
        d(
            "cline",
            "JSON messages array on stdin, --system-prompt (Cline)",
            Client::Cline,
            bare,
        ),
        // Not in the default set (BENCH_DIALECTS=all).
        d(
            "relay",
            "System: line, single-newline Human:/Assistant:, Assistant: cue",
            Client::Relay,
            bare,
        ),
        d(
            "streamlines",
            "one stream-json input line per message",
            Client::StreamLines,
            line,
        ),
        d(
            "maxproxy",
            "<previous_response> XML, positional (claude-max-api-proxy)",
            Client::MaxProxy,
            bare,
        ),
    ]
}

const DEFAULT_DIALECTS: [&str; 4] = ["human", "langchain", "opendesign", "cline"];

/// A ~300-byte user message, one line.
fn user_message(i: usize) -> String {
    let mut s =
        format!("Question {i}: please look at part {i} of the plan and tell me what to change.");
    while s.len() < USER_BYTES {
        s.push_str(" More context about the plan follows here.");
    }
    s
}

/// A one-line-reply server (see `clients::one_line_server`), padded to ~1.5 KB.
fn server() -> ApiServer {
    let server = clients::one_line_server();
    server.set_reply_size(Some(REPLY_BYTES));
    server
}

struct Conversation {
    /// The main request of each turn.
    turns: Vec<LoggedRequest>,
    /// Requests that were not conversation turns.
    side: usize,
    /// Shim only: how each turn ran (runs.kind).
    kinds: Vec<String>,
    secs: f64,
    /// Dollars spent as the CLI priced them (`None`: not known).
    spent: Option<f64>,
    /// Shim only: what `claude-shim stats` says the shim saved.
    estimate: Option<f64>,
}

/// Drive one conversation of `n` turns.
fn drive(d: &Dialect, way: Way, n: usize) -> Conversation {
    let server = server();
    let mut sandbox = Sandbox::real(&server);
    sandbox.ready_clis(); // as users run it (tests turn it off)
    let session = uuid::Uuid::new_v4().to_string();
    let mut history: Vec<(String, String)> = Vec::new();
    let start = Instant::now();
    for i in 1..=n {
        let current = user_message(i);
        let (argv, stdin) = match way {
            Way::Replay | Way::Shim => d.client.render(&history, &current),
            Way::Native if i == 1 => {
                let (a, s) = d.client.render(&[], &current);
                (session_flags("--session-id", &session, a), s)
            }
            Way::Native => {
                let (a, s) = d.client.invocation(&[], &(d.native)(&current));
                (session_flags("--resume", &session, a), s)
            }
        };
        let cmd = if way == Way::Shim {
            sandbox.shimmed(&argv)
        } else {
            sandbox.direct(&argv)
        };
        let out = run(cmd, &stdin);
        assert!(
            out.status.success(),
            "{} {} turn {i} failed: {}",
            d.name,
            way.name(),
            describe(&out)
        );
        let reply = d.client.reply(&out.stdout).unwrap_or_else(|| {
            panic!(
                "{} {} turn {i}: no reply: {}",
                d.name,
                way.name(),
                describe(&out)
            )
        });
        assert!(
            reply.starts_with(&format!("reply {i}:")),
            "{} {} turn {i}: reply {reply:?}",
            d.name,
            way.name()
        );
        history.push((current, reply));
    }
    let secs = start.elapsed().as_secs_f64();
    let turns = server.main_requests();
    assert_eq!(
        turns.len(),
        n,
        "{} {}: one request per turn",
        d.name,
        way.name()
    );
    let side = server.side_requests().len();
    if let Some(dir) = std::env::var_os("BENCH_DUMP") {
        // Every request body, for looking into a figure.
        let dir = PathBuf::from(dir).join(format!("{}-{}", d.name, way.name()));
        let _ = std::fs::create_dir_all(&dir);
        for r in server.requests() {
            let body = serde_json::to_string_pretty(&r.body).unwrap_or_default();
            let _ = std::fs::write(dir.join(format!("{:03}.json", r.index)), body);
        }
    }
    let (kinds, spent, estimate) = match way {
        Way::Shim => {
            let stats = shim_stats(&sandbox);
            let total = &stats["total"];
            (
                run_kinds(&sandbox),
                total["cost_usd"].as_f64(),
                total["saved_usd"].as_f64(),
            )
        }
        _ => (Vec::new(), sessions_spent(&sandbox, n), None),
    };
    Conversation {
        turns,
        side,
        kinds,
        secs,
        spent,
        estimate,
    }
}

/// `claude-shim stats --json` in the shim way's sandbox.
fn shim_stats(sandbox: &Sandbox) -> serde_json::Value {
    let mut cmd = sandbox.manager();
    cmd.args(["stats", "--json"]);
    let out = run(cmd, b"");
    assert!(out.status.success(), "stats: {}", describe(&out));
    serde_json::from_slice(&out.stdout).expect("stats --json")
}

/// What the calls of a way that ran without the shim spent, as the CLI
/// priced it: each call is a session of its own, whose file ends with its
/// total (`cost-state`). `None` unless all `n` are there.
fn sessions_spent(sandbox: &Sandbox, n: usize) -> Option<f64> {
    let totals: Vec<f64> = sandbox
        .session_files()
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            text.lines()
                .rev()
                .filter(|l| l.contains("\"cost-state\""))
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|v| v["totalCostUSD"].as_f64())
        })
        .collect();
    (totals.len() == n).then(|| totals.iter().sum())
}

fn session_flags(flag: &str, session: &str, argv: Vec<String>) -> Vec<String> {
    let mut out = vec![flag.to_owned(), session.to_owned()];
    out.extend(argv);
    out
}

fn run_kinds(sandbox: &Sandbox) -> Vec<String> {
    let db = rusqlite::Connection::open(sandbox.shim_home.join("shim.db")).expect("open shim.db");
    let mut stmt = db
        .prepare("SELECT kind FROM runs ORDER BY id")
        .expect("runs");
    let rows = stmt.query_map([], |r| r.get(0)).expect("runs");
    rows.collect::<rusqlite::Result<_>>().expect("runs")
}

struct Result3 {
    dialect: &'static str,
    what: &'static str,
    ways: [Conversation; 3],
}

fn total(c: &Conversation) -> f64 {
    c.turns.iter().map(LoggedRequest::billed_equivalent).sum()
}

fn kinds_summary(kinds: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for k in kinds {
        match counts.iter_mut().find(|(n, _)| n == k) {
            Some((_, c)) => *c += 1,
            None => counts.push((k.clone(), 1)),
        }
    }
    counts
        .iter()
        .map(|(k, c)| format!("{c} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_dialect(r: &Result3, n: usize) {
    let [replay, shim, native] = &r.ways;
    println!("\n== {} — {}", r.dialect, r.what);
    println!(
        "{:>4} | {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>6} {:>6} {:>6} | {:>6} {:>6}",
        "turn",
        "replay",
        "shim",
        "native",
        "reqB r",
        "reqB s",
        "reqB n",
        "wr s",
        "rd s",
        "pl s",
        "s/n",
        "r/s"
    );
    for i in 0..n {
        let (a, b, c) = (&replay.turns[i], &shim.turns[i], &native.turns[i]);
        let (ba, bb, bc) = (
            a.billed_equivalent(),
            b.billed_equivalent(),
            c.billed_equivalent(),
        );
        println!(
            "{:>4} | {:>8.0} {:>8.0} {:>8.0} | {:>8} {:>8} {:>8} | {:>6} {:>6} {:>6} | {:>6.3} {:>6.2}",
            i + 1,
            ba,
            bb,
            bc,
            a.bytes,
            b.bytes,
            c.bytes,
            b.cache_write,
            b.cache_read,
            b.plain,
            bb / bc,
            ba / bb
        );
    }
    let (ta, tb, tc) = (total(replay), total(shim), total(native));
    println!(
        "total billed-equivalent: replay {ta:.0}, shim {tb:.0}, native {tc:.0}; shim/native {:.3}×, replay/shim {:.2}×",
        tb / tc,
        ta / tb
    );
    println!(
        "shim runs: {}; side requests r/s/n: {}/{}/{}; wall s r/s/n: {:.0}/{:.0}/{:.0}",
        kinds_summary(&shim.kinds),
        replay.side,
        shim.side,
        native.side,
        replay.secs,
        shim.secs,
        native.secs
    );
}

fn csv(results: &[Result3]) -> String {
    let mut out = String::from(
        "dialect,turn,way,request_bytes,plain,cache_write,cache_read,billed_equivalent\n",
    );
    for r in results {
        for (way, conv) in WAYS.iter().zip(&r.ways) {
            for (i, t) in conv.turns.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{:.1}",
                    r.dialect,
                    i + 1,
                    way.name(),
                    t.bytes,
                    t.plain,
                    t.cache_write,
                    t.cache_read,
                    t.billed_equivalent()
                );
            }
        }
    }
    out
}

/// A round axis maximum and tick step for values up to `max`.
fn nice_axis(max: f64) -> (f64, f64) {
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn kilo(v: f64) -> String {
    if v >= 1000.0 {
        let k = v / 1000.0;
        if (k - k.round()).abs() < 1e-9 {
            format!("{k:.0}k")
        } else {
            format!("{k:.1}k")
        }
    } else {
        format!("{v:.0}")
    }
}

const COLOURS: [&str; 3] = ["#d9480f", "#1c7ed6", "#2b8a3e"];

/// Billed-equivalent input tokens per turn: one panel per dialect, three
/// lines each, a shared y scale.
/// One chart panel: a dialect and its billed-equivalent tokens per turn, per way.
struct Series {
    name: String,
    ways: [Vec<f64>; 3],
}

impl Series {
    fn of(r: &Result3) -> Series {
        let billed = |c: &Conversation| {
            c.turns
                .iter()
                .map(LoggedRequest::billed_equivalent)
                .collect()
        };
        Series {
            name: r.dialect.to_owned(),
            ways: [billed(&r.ways[0]), billed(&r.ways[1]), billed(&r.ways[2])],
        }
    }
}

/// The series of a CSV written by this bench (for `BENCH_REDRAW`).
fn series_from_csv(text: &str) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(name), Some(way), Some(billed)) = (f.first(), f.get(2), f.last()) else {
            continue;
        };
        let Some(k) = WAYS.iter().position(|w| w.name() == *way) else {
            continue;
        };
        let v: f64 = billed.parse().unwrap_or(0.0);
        if out.last().is_none_or(|s| s.name != *name) {
            out.push(Series {
                name: name.to_string(),
                ways: Default::default(),
            });
        }
        if let Some(s) = out.last_mut() {
            s.ways[k].push(v);
        }
    }
    out
}

fn svg(results: &[Series], n: usize, cli_version: &str) -> String {
    let (pw, ph) = (470.0, 250.0); // panel size
    let (ml, mr, mt, mb) = (56.0, 14.0, 40.0, 34.0); // margins inside a panel
    let cols = 2usize.min(results.len()).max(1);
    let rows = results.len().div_ceil(cols);
    let head = 58.0;
    let (w, h) = (pw * cols as f64, head + ph * rows as f64);
    let ymax = results
        .iter()
        .flat_map(|r| r.ways.iter().flatten())
        .fold(0.0, |a: f64, b| a.max(*b));
    let (ytop, ystep) = nice_axis(ymax);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="12" y="20" font-size="14" font-weight="bold" fill="#212529">Billed-equivalent input tokens per turn ({n}-turn conversations, Claude Code {cli_version})</text>"##
    );
    let mut lx = 12.0;
    for (i, way) in WAYS.iter().enumerate() {
        let label = match way {
            Way::Replay => "replay the transcript (no shim)",
            Way::Shim => "same client through the shim",
            Way::Native => "native resume, new message only (limit)",
        };
        let dash = if *way == Way::Native {
            r#" stroke-dasharray="5 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r##"<line x1="{lx}" y1="40" x2="{}" y2="40" stroke="{}" stroke-width="2.5"{dash}/><text x="{}" y="44" fill="#212529">{label}</text>"##,
            lx + 22.0,
            COLOURS[i],
            lx + 27.0,
        );
        lx += 27.0 + label.len() as f64 * 5.6 + 20.0;
    }
    for (k, r) in results.iter().enumerate() {
        let (ox, oy) = ((k % cols) as f64 * pw, head + (k / cols) as f64 * ph);
        let (x0, y0) = (ox + ml, oy + mt);
        let (cw, chh) = (pw - ml - mr, ph - mt - mb);
        let x = |turn: usize| x0 + (turn as f64 - 1.0) / ((n.max(2) - 1) as f64) * cw;
        let y = |v: f64| y0 + chh - v / ytop * chh;
        let tot: Vec<f64> = r.ways.iter().map(|w| w.iter().sum()).collect();
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="12" fill="#212529"><tspan font-weight="bold">{}</tspan> — replay/shim {:.2}×, shim/native {:.3}×</text>"##,
            ox + ml,
            oy + 16.0,
            r.name,
            tot[0] / tot[1],
            tot[1] / tot[2]
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" fill="#495057">totals: replay {} · shim {} · native {}</text>"##,
            ox + ml,
            oy + 30.0,
            kilo(tot[0]),
            kilo(tot[1]),
            kilo(tot[2]),
        );
        // Grid and y ticks.
        let mut v = 0.0;
        while v <= ytop + 1e-9 {
            let yy = y(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e9ecef"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#495057">{}</text>"##,
                x0 + cw,
                x0 - 5.0,
                yy + 4.0,
                kilo(v)
            );
            v += ystep;
        }
        // x ticks.
        let xstep = if n > 20 {
            5
        } else if n > 8 {
            2
        } else {
            1
        };
        let mut t = 1;
        while t <= n {
            let xx = x(t);
            let _ = writeln!(
                s,
                r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#adb5bd"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle" fill="#495057">{t}</text>"##,
                y0 + chh,
                y0 + chh + 4.0,
                y0 + chh + 16.0
            );
            t = if t == 1 && xstep > 1 {
                xstep
            } else {
                t + xstep
            };
        }
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#868e96"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{:.1}" stroke="#868e96"/>"##,
            y0 + chh,
            x0 + cw,
            y0 + chh,
            y0 + chh
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#495057">turn</text>"##,
            x0 + cw / 2.0,
            y0 + chh + 29.0
        );
        for (i, way) in r.ways.iter().enumerate() {
            let pts: Vec<String> = way
                .iter()
                .enumerate()
                .map(|(t, v)| format!("{:.1},{:.1}", x(t + 1), y(*v)))
                .collect();
            let dash = if WAYS[i] == Way::Native {
                r#" stroke-dasharray="5 4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round"{dash} points="{}"/>"#,
                COLOURS[i],
                pts.join(" ")
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn main() {
    let n: usize = env_or("BENCH_TURNS", 30usize).max(1);
    let jobs: usize = env_or("BENCH_JOBS", 3usize).max(1);
    let wanted: Vec<String> = match std::env::var("BENCH_DIALECTS") {
        Ok(v) if v == "all" => dialects().iter().map(|d| d.name.to_owned()).collect(),
        Ok(v) if !v.is_empty() => v.split(',').map(|s| s.trim().to_owned()).collect(),
        _ => DEFAULT_DIALECTS.iter().map(|s| s.to_string()).collect(),
    };
    let all = dialects();
    let chosen: Vec<&Dialect> = wanted
        .iter()
        .map(|w| {
            all.iter()
                .find(|d| d.name == w)
                .unwrap_or_else(|| panic!("unknown dialect {w:?}"))
        })
        .collect();
    let out_dir = std::env::var_os("BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/bench"));
    let version = support::RealCli::pinned_version();
    if std::env::var_os("BENCH_REDRAW").is_some() {
        // Only redraw the chart from the CSV of an earlier run.
        let csv_path = out_dir.join("cost.csv");
        let text = std::fs::read_to_string(&csv_path)
            .unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
        let series = series_from_csv(&text);
        let n = series.first().map_or(0, |s| s.ways[0].len());
        let path = out_dir.join("cost.svg");
        std::fs::write(&path, svg(&series, n, &version)).expect("write svg");
        println!("redrew {} from {}", path.display(), csv_path.display());
        return;
    }
    let cli = support::RealCli::path();
    println!(
        "cost: {n}-turn conversations, replies ~{REPLY_BYTES} B, user messages ~{USER_BYTES} B, {} dialect(s), {jobs} at once",
        chosen.len()
    );
    println!("real CLI: {} ({version})", cli.display());
    println!("billed-equivalent = plain + 1.25 × cache writes + 0.1 × cache reads (input tokens, 4 B each)");

    let load_before = load_average();
    let started = Instant::now();
    let mut results = Vec::new();
    for d in &chosen {
        let mut convs: [Option<Conversation>; 3] = [None, None, None];
        // The ways of one dialect, `jobs` at a time.
        for group in WAYS.chunks(jobs) {
            std::thread::scope(|scope| {
                let handles: Vec<_> = group
                    .iter()
                    .map(|&way| (way, scope.spawn(move || drive(d, way, n))))
                    .collect();
                for (way, h) in handles {
                    let idx = WAYS.iter().position(|w| *w == way).expect("way");
                    convs[idx] = Some(h.join().expect("conversation panicked"));
                }
            });
        }
        let [a, b, c] = convs.map(|c| c.expect("driven"));
        let r = Result3 {
            dialect: d.name,
            what: d.what,
            ways: [a, b, c],
        };
        print_dialect(&r, n);
        results.push(r);
    }

    println!("\n== summary ({n} turns; billed-equivalent input tokens, totals)");
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>11} {:>10} | {:>10} {:>10} {:>10} | {:>12}",
        "dialect",
        "replay",
        "shim",
        "native",
        "shim/native",
        "replay/shim",
        "last r",
        "last s",
        "last n",
        "shim runs"
    );
    for r in &results {
        let t: Vec<f64> = r.ways.iter().map(total).collect();
        let last: Vec<f64> = r
            .ways
            .iter()
            .map(|c| c.turns.last().map_or(0.0, LoggedRequest::billed_equivalent))
            .collect();
        println!(
            "{:<12} {:>10.0} {:>10.0} {:>10.0} {:>10.3}× {:>9.2}× | {:>10.0} {:>10.0} {:>10.0} | {}",
            r.dialect,
            t[0],
            t[1],
            t[2],
            t[1] / t[2],
            t[0] / t[1],
            last[0],
            last[1],
            last[2],
            kinds_summary(&r.ways[1].kinds)
        );
    }
    println!(
        "\n== the saving `claude-shim stats` reports, against the truth (replay $ − shim $, as the CLI priced the server's usage); goal: within 10%"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>7}",
        "dialect", "replay $", "shim $", "truth", "estimate", "error", "goal", "goal is"
    );
    for r in &results {
        let [replay, shim, _] = &r.ways;
        let usd = |v: Option<f64>| v.map_or("unknown".into(), |v| format!("{v:.4}"));
        let truth = replay.spent.zip(shim.spent).map(|(a, b)| a - b);
        let error = truth.zip(shim.estimate).map(|(t, e)| (e - t) / t * 100.0);
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>7}",
            r.dialect,
            usd(replay.spent),
            usd(shim.spent),
            usd(truth),
            usd(shim.estimate),
            error.map_or("".into(), |e| format!("{e:+.1}%")),
            "±10%",
            match error {
                Some(e) if e.abs() <= 10.0 => "met",
                Some(_) => "not met",
                None => "unknown",
            }
        );
    }
    println!(
        "load average (1, 5, 15 min): {load_before} at the start, {} at the end",
        load_average()
    );
    println!("elapsed: {:.0} s", started.elapsed().as_secs_f64());

    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("cannot create {}: {e}", out_dir.display());
        return;
    }
    for (name, body) in [
        ("cost.csv", csv(&results)),
        (
            "cost.svg",
            svg(
                &results.iter().map(Series::of).collect::<Vec<_>>(),
                n,
                &version,
            ),
        ),
    ] {
        let path = out_dir.join(name);
        match std::fs::write(&path, body) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    }
}

/// The 1-, 5- and 15-minute load averages.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
