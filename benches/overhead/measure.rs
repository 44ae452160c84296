//! Timing runs side by side (shim vs the fake directly, interleaved) and
//! printing the figures.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::setup::{checkpoint, Setup};

/// Reap `child`; panics unless it exited 0.
pub fn reap(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(status.success(), "{what} failed: {status:?}");
}

/// Run to completion with `stdin` from a file; wall time.
pub fn wall(mut cmd: Command, stdin: Option<&Path>) -> Duration {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn");
    reap(child, &format!("{cmd:?}"));
    start.elapsed()
}

/// Time from spawn to the first stdout byte.
pub fn first_byte(mut cmd: Command, stdin: Option<&Path>) -> Duration {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    cmd.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut byte = [0u8; 1];
    let n = out.read(&mut byte).expect("read");
    let t = start.elapsed();
    assert_eq!(n, 1, "{cmd:?}: no output");
    let _ = std::io::copy(&mut out, &mut std::io::sink());
    reap(child, &format!("{cmd:?}"));
    t
}

/// Read all stdout; (bytes, elapsed).
pub fn drain(mut cmd: Command, stdin: Option<&Path>) -> (u64, Duration) {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    cmd.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    let t = start.elapsed();
    reap(child, &format!("{cmd:?}"));
    (total, t)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("nan"));
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

pub struct Compared {
    shim_p50: f64,
    shim_p90: f64,
    direct_p50: f64,
    direct_p90: f64,
    pub paired: f64,
}

/// [`compare`] from the same database state: the WAL checkpointed, so every
/// case starts alike and its own runs grow the WAL as they would (the shim
/// closes without a checkpoint; ~8 pages a managed run, checkpointed at
/// 1000), covering about the first 80% of a real cycle.
pub fn compare_in(
    s: &Setup,
    n: usize,
    shim: impl FnMut() -> Duration,
    direct: impl FnMut() -> Duration,
) -> Compared {
    checkpoint(s);
    compare(n, shim, direct)
}

/// `n` shim runs interleaved with `n` direct runs, after a warm-up.
pub fn compare(
    n: usize,
    mut shim: impl FnMut() -> Duration,
    mut direct: impl FnMut() -> Duration,
) -> Compared {
    for _ in 0..3 {
        shim();
        direct();
    }
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // Alternate who goes first, so neither always runs on a warmer cache.
        if i % 2 == 0 {
            a.push(ms(shim()));
            b.push(ms(direct()));
        } else {
            b.push(ms(direct()));
            a.push(ms(shim()));
        }
    }
    let diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    Compared {
        shim_p50: quantile(&a, 0.5),
        shim_p90: quantile(&a, 0.9),
        direct_p50: quantile(&b, 0.5),
        direct_p90: quantile(&b, 0.9),
        paired: quantile(&diffs, 0.5),
    }
}

pub fn row(label: &str, c: &Compared) {
    println!(
        "| {label:<36} | {:>8.2} | {:>8.2} | {:>8.2} | {:>8.2} | {:>+8.2} | {:>+8.2} |",
        c.shim_p50,
        c.shim_p90,
        c.direct_p50,
        c.direct_p90,
        c.shim_p50 - c.direct_p50,
        c.paired,
    );
}

pub fn header(first: &str) {
    println!(
        "| {first:<36} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} |",
        "shim p50", "shim p90", "dir p50", "dir p90", "Δ p50", "Δ paired"
    );
    println!("|{}|{}", "-".repeat(38), "----------|".repeat(6));
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "?".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or("?".into(), |kib| format!("{:.1} GiB", kib / 1048576.0));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cores} cores, {cpu}, {mem} RAM; load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}
