//! A user of an installed package, for `packages`: a fresh HOME, the real
//! CLI and a loopback Messages API, and what they do with claude-shim
//! (install, an rc line, a conversation, doctor, removal), each checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::clients::one_line_server;
use crate::support::dist::is_elf;
use crate::support::{
    describe, ok, run, shell, shim_exe, ApiServer, Chat, Client, Input, RealCli, Sandbox,
};

/// The directory holding `program` on the test's own PATH (npm, node).
fn dir_of(program: &str) -> PathBuf {
    let path = which::which(program)
        .unwrap_or_else(|e| panic!("{program} not found ({e}); .ci/test installs it"));
    path.parent().expect("a directory").to_path_buf()
}

/// A user on a fresh machine: a fresh HOME, the real CLI at `<root>/real-bin`
/// talking to a loopback Messages API, and `tools`, the directory their
/// package manager put `claude-shim` in. The shim's data directory is the
/// default one under HOME, as for a user.
pub struct User {
    server: ApiServer,
    pub sb: Sandbox,
    pub tools: PathBuf,
}

impl User {
    pub fn new(tools: &str) -> User {
        let server = one_line_server();
        let mut sb = Sandbox::real(&server);
        // Every turn in a cold CLI: no keeper, run by the packaged binary,
        // outlives the test or its package.
        sb.set_env("CLAUDE_SHIM_WARM", "0");
        sb.set_env("SHELL", shell("bash"));
        let tools = sb.root.join(tools);
        User { server, sb, tools }
    }

    /// `program` with this user's environment: PATH is the package's
    /// directory, the real CLI's, node's, then the system's.
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        self.sb.env(&mut cmd);
        cmd.env_remove("CLAUDE_SHIM_HOME").env(
            "PATH",
            self.sb
                .path_with(&[&self.tools, &self.sb.real_bin, &dir_of("node")]),
        );
        cmd
    }

    /// `sh -c SCRIPT` (a command as printed for the user).
    pub fn sh(&self, script: &str) -> Command {
        let mut cmd = self.cmd("sh");
        cmd.args(["-c", script]);
        cmd
    }

    pub fn claude_shim(&self, args: &[&str]) -> Command {
        let mut cmd = self.cmd("claude-shim");
        cmd.args(args);
        cmd
    }

    /// The shim directory `install` uses by default.
    pub fn shim_dir(&self) -> PathBuf {
        self.sb.home.join(".local/share/claude-shim/bin")
    }

    /// `bash -c SCRIPT` in a shell that read `~/.bashrc` first, as a new
    /// terminal does.
    pub fn bash(&self, script: &str) -> Command {
        let mut cmd = self.cmd(shell("bash"));
        cmd.args(["-c", &format!(". \"$HOME/.bashrc\"\n{script}"), "bash"]);
        cmd
    }

    /// `claude-shim install`: `claude` must be a link to `native` (an ELF
    /// file), and the rc line it prints goes into `~/.bashrc`. Returns the
    /// command it says removes the package.
    pub fn install(&self, native: &Path) -> String {
        let out = ok(self.claude_shim(&["install"]));
        let link = self.shim_dir().join("claude");
        let meta = std::fs::symlink_metadata(&link).expect("install made the link");
        assert!(meta.file_type().is_symlink(), "{out}");
        let target = link.canonicalize().expect("the link resolves");
        assert_eq!(target, native.canonicalize().unwrap(), "{out}");
        assert!(
            is_elf(&target),
            "claude must be the native binary, not a script: {out}"
        );
        let mut lines = out.lines();
        lines.find(|l| l.starts_with("Add this line")).expect(&out);
        let rc = lines.next().unwrap_or_default().trim();
        std::fs::write(self.sb.home.join(".bashrc"), format!("{rc}\n")).unwrap();
        let remove = out
            .split("then `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("install names no command that removes it: {out}"));
        remove.to_owned()
    }

    /// Three turns of a `Human:`/`Assistant:` client replaying its transcript
    /// into `claude -p`, in the shell the rc line set up: turn 1 runs fresh,
    /// turns 2–3 resume, and each request carries the history once.
    pub fn converse(&self) {
        let mut chat = Chat::new(Client::Wrapper);
        let questions = [
            "package question 1",
            "package question 2",
            "package question 3",
        ];
        for (k, q) in questions.iter().enumerate() {
            let mut cmd = self.bash("exec claude \"$@\"");
            let input = chat.prepare(&mut cmd, q);
            let out = run(cmd, input);
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "turn {}: {}",
                k + 1,
                describe(&out)
            );
            chat.keep(q, &out);
            let requests = self.server.main_requests();
            assert_eq!(requests.len(), k + 1, "one request per turn");
            let req = &requests[k];
            assert_eq!(req.reply, chat.history[k].1, "the reply is the server's");
            let users = req.user_texts();
            for earlier in &questions[..=k] {
                let copies: usize = users.iter().map(|u| u.matches(earlier).count()).sum();
                assert_eq!(copies, 1, "turn {}: {earlier:?} in {users:?}", k + 1);
            }
            let replies: Vec<String> = chat.history[..k].iter().map(|(_, a)| a.clone()).collect();
            assert_eq!(
                req.assistant_texts(),
                replies,
                "turn {}: structured history",
                k + 1
            );
        }
        let log: Value = serde_json::from_str(&ok(self.claude_shim(&["log", "--json"]))).unwrap();
        let kinds: Vec<&str> = log["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| t["kind"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(kinds, ["resumed", "resumed", "fresh"], "{log:#}");
    }

    /// `doctor` in a shell the rc line set up: no failure, no warning.
    pub fn doctor_is_clean(&self) {
        let out = run(self.bash("claude-shim doctor --json"), Input::Null);
        let report: Value = serde_json::from_str(&out.out())
            .unwrap_or_else(|e| panic!("doctor --json: {e}\n{}", describe(&out)));
        let problems: Vec<&Value> = report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|c| c["level"] != "ok" && c["level"] != "info")
            .collect();
        assert!(
            out.status.success() && problems.is_empty() && out.stderr.is_empty(),
            "doctor is not clean: {problems:#?}\n{}",
            describe(&out)
        );
        assert_eq!(report["facts"]["mode"], "path", "{report:#}");
    }

    /// Removed by its package manager alone (`remove`, as `install` printed
    /// it), the binary is gone and the link left behind is inert: `claude`
    /// runs the real CLI, a new shell says claude-shim is missing, and
    /// doctor (of any other claude-shim) names the command that removes it.
    pub fn removal_leaves_an_inert_link(&self, remove: &str, gone: &Path) {
        ok(self.sh(remove));
        let link = self.shim_dir().join("claude");
        assert!(!gone.exists(), "{remove} left {}", gone.display());
        assert!(std::fs::symlink_metadata(&link).is_ok(), "the link stays");
        assert!(std::fs::metadata(&link).is_err(), "and points nowhere");

        // A shell set up before the removal: the shim directory first on PATH.
        let path = self.sb.path_with(&[&self.shim_dir(), &self.sb.real_bin]);
        let mut direct = self.cmd("claude");
        direct.arg("--version");
        for mut cmd in [direct, self.sh("claude --version")] {
            cmd.env("PATH", &path);
            let out = ok(cmd);
            assert!(out.starts_with(&RealCli::pinned_version()), "{out}");
        }
        let fresh = run(self.bash("true"), Input::Null);
        assert!(
            fresh.err().contains("claude-shim"),
            "a new shell says so: {}",
            describe(&fresh)
        );

        let mut doctor = self.cmd(shim_exe());
        doctor.args(["doctor", "--json"]);
        let report: Value = serde_json::from_str(&run(doctor, Input::Null).out()).unwrap();
        let check = report["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "shim link"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(check["level"], "warn", "{report:#}");
        let fix = check["fix"].as_str().unwrap_or_default();
        // The fix is a command in a code span (`rm '…'`), then an alternative.
        let rm = fix
            .strip_prefix('`')
            .and_then(|f| f.split('`').next())
            .unwrap_or_default();
        assert_eq!(rm, format!("rm {}", link.display()), "{report:#}");
        ok(self.sh(rm));
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the fix removed it"
        );
    }
}
