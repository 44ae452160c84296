//! What the shim costs a caller, measured against the same fake CLI run
//! directly. Runs are interleaved (shim, direct, shim, direct, …) so drift in
//! machine load hits both sides alike. Prints figures; asserts nothing.
//!
//! `cargo bench --bench passthrough` (N runs per side: `BENCH_N`, default 200;
//! `BENCH_SHIM`: another claude-shim binary to measure). Pass-through is also
//! measured for the packaged build (static, at a fixed address), which
//! `.ci/package` leaves at `target/<triple>/release/claude-shim`, and for
//! `BENCH_INSTALLED`, the binary README's quick start (`./install.sh`)
//! installed, e.g. `~/.cargo/bin/claude-shim`: side by side with the bare
//! static exec wrapper, in one run.

#[path = "../tests/support/dist.rs"]
#[allow(dead_code)]
mod dist;

use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The shim under test: `BENCH_SHIM` (another build, e.g. static), else
/// the one cargo built.
fn shim_exe() -> PathBuf {
    std::env::var_os("BENCH_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-shim")))
}

/// A real claude stand-in that answers the shim's capability probe the way
/// the CLI does (so the probe runs once and is cached) and otherwise exits.
const PROBED_FAKE: &str = r#"#!/bin/sh
case "$1" in
--version) echo "2.1.330 (Claude Code)" ;;
--help) printf '  -r, --resume [value]  Resume\n  --fork-session  Fork\n  --session-id <uuid>  Use\n' ;;
# the hidden --resume-session-at is found in the binary: this line names it
esac
exit 0
"#;

/// Prints one byte at once, then takes 100 ms to finish.
const FIRST_BYTE_FAKE: &str = r#"#!/bin/sh
case "$1" in
--version) echo "2.1.330 (Claude Code)"; exit 0 ;;
--help) printf '  -r, --resume [value]  Resume\n  --fork-session  Fork\n  --session-id <uuid>  Use\n'; exit 0 ;;
# the hidden --resume-session-at is found in the binary: this line names it
esac
printf x
exec sleep 0.1
"#;

struct Setup {
    _dir: tempfile::TempDir,
    claude: PathBuf,
    home: PathBuf,
    shim_home: PathBuf,
}

/// How `exe` is linked, for the table's labels.
fn linked(exe: &Path) -> &'static str {
    if !cfg!(target_os = "linux") || !dist::is_elf(exe) {
        return "?";
    }
    match dist::linking(exe) {
        dist::Linking {
            dynamic_loader: false,
            fixed_address: true,
        } => "static, fixed address",
        dist::Linking {
            dynamic_loader: false,
            ..
        } => "static-pie",
        dist::Linking {
            fixed_address: true,
            ..
        } => "dynamic",
        _ => "dynamic, PIE",
    }
}

/// The load average, printed with the figures it bears on.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The build the packages carry (`.ci/package`), when it is there.
fn packaged_exe() -> Option<PathBuf> {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    Some(dir.join(triple).join("release/claude-shim")).filter(|p| p.is_file())
}

impl Setup {
    fn new() -> Setup {
        Setup::of(&shim_exe())
    }

    fn of(exe: &Path) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let (bin, home, shim_home) = (root.join("bin"), root.join("home"), root.join("shim-home"));
        for d in [&bin, &home, &shim_home] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let claude = bin.join("claude");
        symlink(exe, &claude).expect("link");
        Setup {
            _dir: dir,
            claude,
            home,
            shim_home,
        }
    }

    fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.home.join(name);
        std::fs::write(&path, text).expect("write fake");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn command(&self, program: &Path, real: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_remove("CLAUDE_SHIM_BYPASS")
            .env_remove("CLAUDE_SHIM_GUARD")
            .env_remove("CLAUDE_SHIM_LOG")
            .env_remove("CLAUDE_SHIM_FRESH")
            .env("CLAUDE_SHIM_REAL", real)
            .env("CLAUDE_SHIM_HOME", &self.shim_home)
            .env("HOME", &self.home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }
}

/// Wall time of one complete run.
fn wall(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let status = cmd.status().expect("run");
    let t = start.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status:?}");
    t
}

/// Time from spawn to the first stdout byte (the run is then finished
/// unmeasured).
fn first_byte(mut cmd: Command) -> Duration {
    cmd.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    let n = out.read(&mut byte).expect("read");
    let t = start.elapsed();
    assert_eq!((n, byte[0]), (1, b'x'), "{cmd:?}");
    let _ = std::io::copy(&mut out, &mut std::io::sink());
    child.wait().expect("wait");
    t
}

/// A static C program that execs `real` with its own arguments: what the
/// thinnest possible wrapper costs (needs `cc` and a static libc).
fn bare_wrapper(s: &Setup, real: &Path) -> Result<PathBuf, String> {
    let src = s.home.join("bare.c");
    let exe = s.home.join("bare-claude");
    let text = format!(
        "#include <unistd.h>\nint main(int c, char **v) {{ (void)c; execv({:?}, v); return 127; }}\n",
        real.display().to_string()
    );
    std::fs::write(&src, text).map_err(|e| e.to_string())?;
    let out = Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(exe)
}

struct Stats {
    median: f64,
    p90: f64,
}

fn stats(samples: &[Duration]) -> Stats {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        median: at(0.5),
        p90: at(0.9),
    }
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Interleave `n` shim runs with `n` direct runs after a short warm-up.
fn compare(
    label: &str,
    n: usize,
    measure: fn(Command) -> Duration,
    shim: impl Fn() -> Command,
    direct: impl Fn() -> Command,
) -> f64 {
    for _ in 0..5 {
        measure(shim());
        measure(direct());
    }
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        a.push(measure(shim()));
        b.push(measure(direct()));
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let paired = median_of(
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x.as_secs_f64() - y.as_secs_f64()) * 1e3)
            .collect(),
    );
    println!(
        "{label:<48} {:>8.2} {:>8.2} {:>9.2} {:>8.2} {:>9.2} {:>9.2}",
        sa.median,
        sa.p90,
        sb.median,
        sb.p90,
        sa.median - sb.median,
        paired
    );
    paired
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let s = Setup::new();
    let true_bin = Path::new("/bin/true");
    let probed = s.script("probed-fake", PROBED_FAKE);
    let first = s.script("first-byte-fake", FIRST_BYTE_FAKE);

    println!(
        "claude-shim overhead: {} ({})",
        shim_exe().display(),
        linked(&shim_exe())
    );
    println!("N = {n} runs per side, interleaved; times in ms");
    println!("load average at the start: {}\n", load());
    println!(
        "{:<48} {:>8} {:>8} {:>9} {:>8} {:>9} {:>9}",
        "case", "shim p50", "shim p90", "direct p50", "dir p90", "Δ p50", "Δ paired"
    );
    println!("{}", "-".repeat(48 + 9 * 6 + 4));

    let passthrough = compare(
        "pass-through `claude --version` (/bin/true)",
        n,
        wall,
        || s.command(&s.claude, true_bin, &["--version"]),
        || s.command(true_bin, true_bin, &["--version"]),
    );
    // Other builds of the shim, the same case: (label, added ms).
    let own = match std::env::var_os("BENCH_SHIM") {
        Some(_) => "BENCH_SHIM",
        None => "cargo build, as plain `cargo install`",
    };
    let mut builds = vec![(format!("{own} ({})", linked(&shim_exe())), passthrough)];
    let others = [
        ("packaged build (.ci/package)", packaged_exe()),
        (
            "quick start's (BENCH_INSTALLED)",
            std::env::var_os("BENCH_INSTALLED").map(PathBuf::from),
        ),
    ];
    for (what, exe) in others {
        let Some(exe) = exe else { continue };
        let p = Setup::of(&exe);
        let added = compare(
            &format!("  the same, {what}"),
            n,
            wall,
            || p.command(&p.claude, true_bin, &["--version"]),
            || p.command(true_bin, true_bin, &["--version"]),
        );
        builds.push((format!("{what} ({})", linked(&exe)), added));
    }
    // The floor for any wrapper: a static C program that only execs the
    // real binary. Goal (issue 20): the shim's pass-through adds at most
    // twice what this adds.
    match bare_wrapper(&s, true_bin) {
        Ok(bare) => {
            let bare = compare(
                "bare static exec wrapper `--version` (/bin/true)",
                n,
                wall,
                || s.command(&bare, true_bin, &["--version"]),
                || s.command(true_bin, true_bin, &["--version"]),
            );
            println!("  goal: pass-through adds <= 2 x the bare wrapper ({bare:+.2} ms):");
            for (build, added) in &builds {
                println!(
                    "    {build:<58} {added:+.2} ms ({:.1}x): {}",
                    added / bare,
                    if *added <= 2.0 * bare {
                        "met"
                    } else {
                        "missed"
                    }
                );
            }
            if packaged_exe().is_none() {
                println!(
                    "    (no packaged build at target/<triple>/release: run .ci/package to measure it)"
                );
            }
        }
        Err(why) => println!("(no bare-wrapper baseline: {why})"),
    }
    compare(
        "managed `claude -p hi` (sh fake, probe cached)",
        n,
        wall,
        || s.command(&s.claude, &probed, &["-p", "hi"]),
        || s.command(&probed, &probed, &["-p", "hi"]),
    );
    compare(
        "managed `claude -p hi` (/bin/true)",
        n,
        wall,
        || s.command(&s.claude, true_bin, &["-p", "hi"]),
        || s.command(true_bin, true_bin, &["-p", "hi"]),
    );
    compare(
        "first stdout byte, managed `-p hi`",
        n,
        first_byte,
        || s.command(&s.claude, &first, &["-p", "hi"]),
        || s.command(&first, &first, &["-p", "hi"]),
    );
    compare(
        "first stdout byte, pass-through `hi`",
        n,
        first_byte,
        || s.command(&s.claude, &first, &["hi"]),
        || s.command(&first, &first, &["hi"]),
    );
    println!(
        "\nΔ p50 = shim median − direct median; Δ paired = median of (shim − direct) per pair."
    );
    println!("load average at the end: {}", load());
}
