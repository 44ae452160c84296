//! What each way of installing claude-shim costs per call, side by side:
//! `claude-shim --version` through npm's bin with the install script run (the
//! native binary put in the launcher's place), without it (the Node launcher),
//! and pip's venv bin, against the packaged binary run directly; and `claude`
//! as `claude-shim install` links it (to the native binary) against a
//! `claude` linked to the Node launcher (what install never does), both
//! passing `--version` through to a stand-in real claude (`/bin/true`).
//! Installs dist/'s packages (`.ci/package`) into a temp dir, offline. Runs
//! interleaved, medians printed; asserts nothing.
//!
//! `cargo bench --bench launchers` (rounds: `BENCH_N`, default 100).

#[path = "../tests/support/mod.rs"]
mod support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use support::dist::{dist, is_elf, platform};
use support::figures::{env_or, median};

/// Run to success, quietly, in `home`; panics with what it printed.
fn must(mut cmd: Command, home: &Path) {
    let out = cmd
        .env("HOME", home)
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `npm install -g --prefix <prefix>` of dist/'s tarballs; returns the bin dir.
fn npm(prefix: &Path, home: &Path, extra: &[&str]) -> PathBuf {
    let mut cmd = Command::new("npm");
    cmd.args([
        "install",
        "-g",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--prefix",
    ])
    .arg(prefix)
    .args(extra)
    .args(dist().npm);
    must(cmd, home);
    prefix.join("bin")
}

/// Milliseconds of one run of `program args`, output discarded.
fn wall(program: &Path, args: &[&str], path: &str, home: &Path) -> f64 {
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("CLAUDE_SHIM_HOME", home.join("shim"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run");
    let ms = start.elapsed().as_secs_f64() * 1e3;
    assert!(status.success(), "{program:?} {args:?}: {status:?}");
    ms
}

struct Case {
    label: &'static str,
    program: PathBuf,
    args: &'static [&'static str],
    path: String,
}

fn main() {
    let n: usize = env_or("BENCH_N", 100);
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    let home = root.join("home");
    std::fs::create_dir(&home).unwrap();

    let native_bin = npm(&root.join("npm"), &home, &[]);
    let launcher_bin = npm(&root.join("npm-no-scripts"), &home, &["--ignore-scripts"]);
    assert!(
        is_elf(&native_bin.join("claude-shim")),
        "the install script ran"
    );
    assert!(
        !is_elf(&launcher_bin.join("claude-shim")),
        "the Node launcher stayed"
    );
    let native = root.join(format!(
        "npm-no-scripts/lib/node_modules/@claude-shim/{}/bin/claude-shim",
        platform()
    ));
    let venv = root.join("venv");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/cache/maturin/bin/python");
    let mut make = Command::new(&python);
    make.args(["-m", "venv"]).arg(&venv);
    must(make, &home);
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--no-index", "--no-deps", "--quiet"])
        .arg(dist().wheel);
    must(pip, &home);

    // `claude` links as install makes them (to the native binary) and as it
    // never does (to the Node launcher), each in front of a stand-in real one.
    let (real, to_native, to_launcher) = (root.join("real"), root.join("a"), root.join("b"));
    for d in [&real, &to_native, &to_launcher] {
        std::fs::create_dir(d).unwrap();
    }
    symlink("/bin/true", real.join("claude")).unwrap();
    symlink(&native, to_native.join("claude")).unwrap();
    symlink(launcher_bin.join("claude-shim"), to_launcher.join("claude")).unwrap();

    let node_dir = which::which("node").expect("node on PATH");
    let system = format!("{}:/usr/bin:/bin", node_dir.parent().unwrap().display());
    let via = |dir: &Path| format!("{}:{}:{system}", dir.display(), real.display());
    let cases = [
        Case {
            label: "claude-shim --version: the binary, run directly",
            program: native.clone(),
            args: &["--version"],
            path: system.clone(),
        },
        Case {
            label: "claude-shim --version: npm bin, install script ran",
            program: native_bin.join("claude-shim"),
            args: &["--version"],
            path: system.clone(),
        },
        Case {
            label: "claude-shim --version: npm bin, Node launcher",
            program: launcher_bin.join("claude-shim"),
            args: &["--version"],
            path: system.clone(),
        },
        Case {
            label: "claude-shim --version: pip venv bin",
            program: venv.join("bin/claude-shim"),
            args: &["--version"],
            path: system.clone(),
        },
        Case {
            label: "claude --version: the real one (/bin/true) alone",
            program: real.join("claude"),
            args: &["--version"],
            path: via(&real),
        },
        Case {
            label: "claude --version: linked by install (native)",
            program: to_native.join("claude"),
            args: &["--version"],
            path: via(&to_native),
        },
        Case {
            label: "claude --version: linked to the Node launcher",
            program: to_launcher.join("claude"),
            args: &["--version"],
            path: via(&to_launcher),
        },
    ];

    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(n); cases.len()];
    for round in 0..n + 5 {
        // A different case first each round, so drift hits every case alike.
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let c = &cases[i];
            let ms = wall(&c.program, c.args, &c.path, &home);
            if round >= 5 {
                samples[i].push(ms);
            }
        }
    }

    println!("claude-shim launchers: per-call wall time, median of {n} interleaved rounds (ms)");
    println!("{:<54} {:>8} {:>10}", "case", "median", "added");
    let mut base = 0.0;
    for (i, c) in cases.iter().enumerate() {
        let m = median(samples[i].clone());
        if i == 0 || i == 4 {
            base = m;
            println!("{:<54} {m:>8.2} {:>10}", c.label, "(base)");
        } else {
            println!("{:<54} {m:>8.2} {:>+10.2}", c.label, m - base);
        }
    }
}
