//! One conversation with the REAL Claude Code CLI: the set-up of every e2e
//! file that holds one, on the model of ripgrep's `setup() -> (Dir,
//! TestCommand)`. A [`World`] is a loopback Messages-API server, a sandbox
//! whose real CLI talks to it (the shim's debug log at `<root>/shim.log`),
//! and the history of a `Human:`/`Assistant:` client that replays its
//! transcript on stdin every turn. It sends a turn ([`World::turn`], or
//! [`World::send`] for any command and reader), kills one mid-request
//! ([`World::killed`]), and reads what the shim made of them (its log, its
//! `runs`, the keeper's processes); on drop it leaves no process of its
//! sandbox behind. A file's own needs (an output format, a way to call, the
//! keeper's state) are a few functions of its own over this one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use super::api::{ApiServer, LoggedRequest};
use super::cli::{shim_exe, RealCli};
use super::clients::{labels, text_reply};
use super::process::{describe, run, Ran};
use super::sandbox::Sandbox;
use super::store::{run_rows, RunRow};

/// How long a killed turn's request is held, and how long [`World::killed`]
/// waits for it to reach the server: a hang guard, not a measure.
const STALL: Duration = Duration::from_secs(120);

pub struct World {
    pub server: ApiServer,
    pub sb: Sandbox,
    /// `(message, reply)` of every turn kept so far, oldest first.
    pub history: Vec<(String, String)>,
}

impl World {
    /// The pinned real CLI, and a server with its default replies.
    pub fn new() -> World {
        World::with_server(ApiServer::start())
    }

    /// [`World::new`] with warm turns on (the default) or off
    /// (`CLAUDE_SHIM_WARM=0`).
    pub fn warm(on: bool) -> World {
        let mut w = World::new();
        if !on {
            w.sb.set_env("CLAUDE_SHIM_WARM", "0");
        }
        w
    }

    /// The pinned real CLI talking to `server` (its replies set by the caller).
    pub fn with_server(server: ApiServer) -> World {
        let sb = Sandbox::real(&server);
        World::with_sandbox(server, sb)
    }

    /// Another real CLI (`RealCli::extra`) talking to `server`.
    pub fn with_cli(server: ApiServer, cli: PathBuf) -> World {
        let sb = Sandbox::real_with(&server, cli);
        World::with_sandbox(server, sb)
    }

    fn with_sandbox(server: ApiServer, mut sb: Sandbox) -> World {
        let log = sb.root.join("shim.log");
        sb.set_env("CLAUDE_SHIM_LOG", &log);
        World {
            server,
            sb,
            history: Vec::new(),
        }
    }

    /// The shim's debug log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.sb.root.join("shim.log")).unwrap_or_default()
    }

    /// The client's prompt for `msg`: the transcript so far, then `msg`.
    pub fn prompt(&self, msg: &str) -> String {
        labels(&self.history, msg, "Human", "\n\n")
    }

    /// One turn of any `claude` command of this sandbox: the prompt for `msg`
    /// on its stdin. When it succeeded, the reply `read` takes from its
    /// output is kept in the history. No other check.
    pub fn send(&mut self, cmd: Command, msg: &str, read: impl FnOnce(&Ran) -> String) -> Ran {
        let out = run(cmd, self.prompt(msg).as_bytes());
        if out.status.success() {
            self.history.push((msg.to_owned(), read(&out)));
        }
        out
    }

    /// One turn through the shim (`claude -p`, text output) that must
    /// succeed; its reply is kept.
    pub fn turn(&mut self, msg: &str) -> Ran {
        self.turn_env(msg, &[])
    }

    /// [`World::turn`] with these variables set for this turn only.
    pub fn turn_env(&mut self, msg: &str, env: &[(&str, &str)]) -> Ran {
        let mut cmd = self.sb.shimmed(["-p"]);
        cmd.envs(env.iter().copied());
        let out = self.send(cmd, msg, |out| text_reply(&out.stdout));
        assert!(
            out.status.success(),
            "{msg}: {}\n{}",
            describe(&out),
            self.log()
        );
        out
    }

    /// Send `msg` through the shim (`claude -p`, text) and kill the shim with
    /// `signal` while the model is at work: the server holds its answer to
    /// every request `stalled` picks, and the signal goes once one of them is
    /// a main request that reached it. The turn must fail; what the caller
    /// saw is returned. The server keeps holding what `stalled` picks, and
    /// its log, until the caller clears them (`server.clear_delay()`,
    /// `server.clear_log()`): after the killed CLI is gone, if a request it
    /// might still make must not be answered or seen.
    pub fn killed(
        &self,
        msg: &str,
        signal: Signal,
        stalled: impl Fn(&LoggedRequest) -> bool + Send + Sync + 'static,
    ) -> Ran {
        let stalled = Arc::new(stalled);
        let held = Arc::clone(&stalled);
        self.server
            .set_delay(move |req: &LoggedRequest| match held(req) {
                true => STALL,
                false => Duration::ZERO,
            });
        let mut cmd = self.sb.shimmed(["-p"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn the shim");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(self.prompt(msg).as_bytes()).unwrap();
        }
        let deadline = Instant::now() + STALL;
        while !self.server.main_requests().iter().any(|r| stalled(r)) {
            assert!(
                Instant::now() < deadline,
                "{msg}: the stalled request never reached the API\n{}",
                self.log()
            );
            if let Ok(Some(status)) = child.try_wait() {
                let out = Ran::from(child.wait_with_output().unwrap());
                panic!(
                    "{msg}: the turn ended ({status}) before it was killed: {}\n{}",
                    describe(&out),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = Ran::from(child.wait_with_output().unwrap());
        assert!(
            !out.status.success(),
            "killed: {}\n{}",
            describe(&out),
            self.log()
        );
        out
    }

    /// The shim's `runs` rows, oldest first.
    pub fn runs(&self) -> Vec<RunRow> {
        run_rows(&self.sb.shim_home)
    }

    /// How each managed turn ran (`fresh`, `resumed`, `forked`, …), in order.
    pub fn kinds(&self) -> Vec<String> {
        self.runs().into_iter().map(|r| r.kind).collect()
    }

    /// Each managed turn ran as `want` says, `(kind, why code)` in order
    /// (`("fresh", "first-turn")`, `("resumed", "resumed")`…); `context`
    /// is shown if not.
    pub fn assert_runs(&self, want: &[(&str, &str)], context: &str) {
        let runs: Vec<(String, String)> = self
            .runs()
            .into_iter()
            .map(|r| (r.kind, r.why_code))
            .collect();
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, w)| (k.to_string(), w.to_string()))
            .collect();
        assert_eq!(runs, want, "{context}");
    }

    /// The engine of each managed turn (`cold`, `live`, `warm`, `ready`), in order.
    pub fn engines(&self) -> Vec<String> {
        self.runs().into_iter().map(|r| r.engine).collect()
    }

    /// The engine of the last managed turn ('' when none).
    pub fn last_engine(&self) -> String {
        self.engines().pop().unwrap_or_default()
    }

    /// `(kind, why_code)` of the last managed turn.
    pub fn last_run(&self) -> (String, String) {
        let last = self.runs().pop().expect("a managed turn");
        (last.kind, last.why_code)
    }

    /// The shim's `errors.log`, if it wrote one.
    pub fn errors_log(&self) -> Option<String> {
        std::fs::read_to_string(self.sb.shim_home.join("errors.log")).ok()
    }

    /// Everything useful when an assertion fails: the shim's log, its runs,
    /// the main requests (session, user texts), and its `errors.log`.
    pub fn context(&self) -> String {
        let mut s = String::from("=== shim log ===\n");
        s.push_str(&self.sb.unsandbox(&self.log()));
        s.push_str("=== runs ===\n");
        for r in self.runs() {
            s.push_str(&format!("{} {:?}\n", r.kind, r.session));
        }
        s.push_str("=== main requests: session, user texts ===\n");
        for q in self.server.main_requests() {
            s.push_str(&format!(
                "#{} {:?} {:?}\n",
                q.index,
                q.session_id(),
                q.user_texts()
            ));
        }
        if let Some(e) = self.errors_log() {
            s.push_str(&format!("=== errors.log ===\n{e}"));
        }
        s
    }

    /// Nothing inside the shim failed and was worked around.
    pub fn assert_no_shim_errors(&self) {
        assert!(
            self.errors_log().is_none(),
            "the shim logged errors\n{}",
            self.context()
        );
    }

    /// `warm status --json` of this world's keeper (`Value::Null` when none runs).
    pub fn keeper_status(&self) -> Value {
        let mut cmd = Command::new(shim_exe());
        cmd.args(["warm", "status", "--json"])
            .env_clear()
            .env("HOME", &self.sb.home)
            .env("CLAUDE_SHIM_HOME", &self.sb.shim_home);
        let out = run(cmd, b"");
        assert!(out.status.success(), "{}", describe(&out));
        serde_json::from_slice::<Value>(&out.stdout).expect("status json")["keeper"].clone()
    }

    /// `claude-shim warm stop`: the keeper and its live CLIs end.
    pub fn stop_keeper(&self) {
        let mut cmd = Command::new(shim_exe());
        cmd.args(["warm", "stop"])
            .env_clear()
            .env("HOME", &self.sb.home)
            .env("CLAUDE_SHIM_HOME", &self.sb.shim_home);
        let out = run(cmd, b"");
        assert!(out.status.success(), "{}", describe(&out));
    }

    /// Processes started for this sandbox (its HOME in their environment).
    pub fn processes(&self) -> Vec<i32> {
        processes_with_home(&self.sb.home)
    }

    /// Every session file line is one whole JSON record: no interleaved writers.
    pub fn assert_session_files_intact(&self) {
        for f in self.sb.session_files() {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "{} line {}: {line}",
                    f.display(),
                    i + 1
                );
            }
        }
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if std::env::var_os("CLAUDE_SHIM_TEST_CENSUS").is_some() {
            // Not while a test's store is broken on purpose: a panic in drop.
            let engines = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.engines()));
            crate::support::sandbox::census_engines(&self.sb.root, &engines.unwrap_or_default());
        }
        // Leave no keeper or live CLI behind, whatever the test did.
        for pid in self.processes() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Processes (not this one) with `HOME=<home>` in their environment.
pub fn processes_with_home(home: &Path) -> Vec<i32> {
    let needle = format!("HOME={}\0", home.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            out.push(pid);
        }
    }
    out
}
