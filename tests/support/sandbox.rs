//! Throwaway directories and commands that run the real CLI, directly or through the shim.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::api::ApiServer;
use super::cli::{shim_exe, RealCli};
use super::mask::{mask_volatile, slug};

/// How long [`run`] lets a command take before killing it and failing the test.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// One isolated world for CLI runs, all under one temp dir (removed on drop):
///
/// ```text
/// <root>/home        HOME (so ~/.claude is private)
/// <root>/work        cwd of every run
/// <root>/shim-home   CLAUDE_SHIM_HOME
/// <root>/shim-bin    claude -> target/…/claude-shim
/// <root>/real-bin    claude -> the real CLI
/// ```
pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// Canonical path of the sandbox root.
    pub root: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
    pub shim_home: PathBuf,
    pub shim_bin: PathBuf,
    pub real_bin: PathBuf,
    /// The real CLI the `real-bin/claude` link points at.
    pub real_cli: PathBuf,
    base_url: String,
    extra_env: Vec<(OsString, OsString)>,
}

impl Sandbox {
    /// A sandbox whose runs talk to `server`, with the real CLI from [`RealCli::path`].
    pub fn new(server: &ApiServer) -> Sandbox {
        Self::with_base_url(&server.base_url())
    }

    /// A sandbox whose runs talk to the Messages API at `base_url`.
    pub fn with_base_url(base_url: &str) -> Sandbox {
        let real_cli = RealCli::path();
        let dir = tempfile::Builder::new()
            .prefix("claude-shim-e2e.")
            .tempdir()
            .expect("create sandbox temp dir");
        let root = dir.path().canonicalize().expect("canonicalize sandbox");
        let mk = |name: &str| {
            let p = root.join(name);
            std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
            p
        };
        let home = mk("home");
        let work = mk("work");
        let shim_home = mk("shim-home");
        let shim_bin = mk("shim-bin");
        let real_bin = mk("real-bin");
        symlink(shim_exe(), shim_bin.join("claude")).expect("symlink shim");
        symlink(&real_cli, real_bin.join("claude")).expect("symlink real cli");
        Sandbox {
            _dir: dir,
            root,
            home,
            work,
            shim_home,
            shim_bin,
            real_bin,
            real_cli,
            base_url: base_url.to_string(),
            extra_env: Vec::new(),
        }
    }

    /// Add (or override) an environment variable for every command built afterwards.
    pub fn set_env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        let key = key.as_ref().to_os_string();
        self.extra_env.retain(|(k, _)| *k != key);
        self.extra_env.push((key, value.as_ref().to_os_string()));
        self
    }

    /// `~/.claude` of this sandbox.
    pub fn claude_dir(&self) -> PathBuf {
        self.home.join(".claude")
    }

    /// Every session transcript `~/.claude/projects/*/*.jsonl`, sorted.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(projects) = std::fs::read_dir(self.claude_dir().join("projects")) else {
            return out;
        };
        for project in projects.flatten() {
            let Ok(files) = std::fs::read_dir(project.path()) else {
                continue;
            };
            for f in files.flatten() {
                let p = f.path();
                if p.extension().is_some_and(|e| e == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    /// The transcript of session `id`, if it exists.
    pub fn session_file(&self, id: &str) -> Option<PathBuf> {
        let name = format!("{id}.jsonl");
        self.session_files()
            .into_iter()
            .find(|p| p.file_name().is_some_and(|n| *n == *name))
    }

    /// PATH for direct runs: `<real-bin>:/usr/bin:/bin`.
    pub fn direct_path(&self) -> OsString {
        join_path(&[&self.real_bin, Path::new("/usr/bin"), Path::new("/bin")])
    }

    /// PATH for shimmed runs: `<shim-bin>:<real-bin>:/usr/bin:/bin`.
    pub fn shimmed_path(&self) -> OsString {
        join_path(&[
            &self.shim_bin,
            &self.real_bin,
            Path::new("/usr/bin"),
            Path::new("/bin"),
        ])
    }

    /// Run `claude` from a PATH that has only the real CLI.
    pub fn direct<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(self.direct_path(), args)
    }

    /// Run `claude` from a PATH with the shim ahead of the real CLI.
    pub fn shimmed<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(self.shimmed_path(), args)
    }

    /// The shim as a client configured with a path to `claude` finds it.
    pub fn shim_claude(&self) -> PathBuf {
        self.shim_bin.join("claude")
    }

    /// Run `program` (a client: python, node…) in this sandbox's world: its cwd, HOME,
    /// API server and shim home, with the shim ahead of the real CLI on PATH.
    pub fn client<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.program(program, self.shimmed_path(), args)
    }

    fn command<I, S>(&self, path_env: OsString, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        // A bare `claude`, resolved by std from the PATH given to the child, as a caller's
        // shell would.
        self.program("claude", path_env, args)
    }

    fn program<I, S>(&self, program: impl AsRef<OsStr>, path_env: OsString, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", path_env)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("ANTHROPIC_BASE_URL", &self.base_url)
            .env("ANTHROPIC_API_KEY", "x")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_SHIM_HOME", &self.shim_home);
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Mask what legitimately differs between two runs in different sandboxes: this
    /// sandbox's paths (`<SANDBOX>`, and `<SANDBOX_SLUG>` for the project-directory form),
    /// then [`mask_volatile`].
    pub fn mask(&self, text: &str) -> String {
        mask_volatile(&self.unsandbox(text))
    }

    /// Replace this sandbox's root path (and its project-slug form) by placeholders.
    pub fn unsandbox(&self, text: &str) -> String {
        let root = self.root.to_string_lossy();
        let mut out = text.replace(&*root, "<SANDBOX>");
        let raw = self._dir.path().to_string_lossy();
        if raw != root {
            out = out.replace(&*raw, "<SANDBOX>");
        }
        out.replace(&slug(&root), "<SANDBOX_SLUG>")
    }
}

fn join_path(dirs: &[&Path]) -> OsString {
    std::env::join_paths(dirs).expect("join PATH")
}

/// Run `cmd` with `stdin` as its standard input, capturing stdout and stderr; panics if it
/// takes longer than [`RUN_TIMEOUT`].
pub fn run(cmd: Command, stdin: &[u8]) -> Output {
    run_with_timeout(cmd, stdin, RUN_TIMEOUT)
}

/// [`run`] with an explicit timeout; the whole process group is killed on expiry.
pub fn run_with_timeout(mut cmd: Command, stdin: &[u8], timeout: Duration) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let desc = format!("{cmd:?}");
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {desc}: {e}"));
    let mut child_in = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = thread::spawn(move || {
        // The child may exit without reading everything: ignore EPIPE.
        let _ = child_in.write_all(&input);
    });
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    for (is_out, mut pipe) in [
        (
            true,
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
        ),
        (false, Box::new(child.stderr.take().expect("stderr"))),
    ] {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut b = Vec::new();
            let _ = pipe.read_to_end(&mut b);
            let _ = tx.send((is_out, b));
        });
    }
    drop(tx);
    let deadline = Instant::now() + timeout;
    let kill_and_panic = |child: &mut Child, what: &str, got: &[(bool, Vec<u8>)]| -> ! {
        let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
        let mut partial = String::new();
        for (is_out, b) in got {
            let name = if *is_out { "stdout" } else { "stderr" };
            partial.push_str(&format!("\n--- {name} ---\n{}", String::from_utf8_lossy(b)));
        }
        panic!("{what} after {timeout:?}: {desc}{partial}");
    };
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() >= deadline {
            kill_and_panic(&mut child, "timed out", &[]);
        }
        thread::sleep(Duration::from_millis(20));
    };
    // Both pipes close once every process holding them has exited.
    let mut got = Vec::new();
    while got.len() < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(x) => got.push(x),
            Err(_) => kill_and_panic(
                &mut child,
                "exited but its output pipes stayed open (a lingering child?)",
                &got,
            ),
        }
    }
    let _ = writer.join();
    let take = |want: bool| {
        got.iter()
            .find(|(is_out, _)| *is_out == want)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    Output {
        status,
        stdout: take(true),
        stderr: take(false),
    }
}

/// A readable dump of an [`Output`] for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
