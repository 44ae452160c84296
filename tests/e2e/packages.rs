//! The packages `.ci/package` builds into `dist/`, installed as a user would:
//! every npm tarball with `npm install -g --prefix` (with and without install
//! scripts), the wheel with pip into a fresh venv; each in a fresh prefix with
//! a fresh HOME, offline. For each: `claude-shim --version` is Cargo.toml's;
//! `claude-shim install` links `claude` to the native binary (ELF, never a
//! script); the rc line it prints sets up bash, where a replayed 3-turn
//! conversation through the real CLI resumes turns 2–3 and `doctor` is clean;
//! and removing the package leaves nothing broken: with `claude-shim uninstall`
//! first nothing is left, without it the `claude` link is skipped by PATH
//! lookups, a new shell says claude-shim is gone, and doctor names the `rm`.
//! Fails, never skips, when `dist/` is missing or stale: run `.ci/package`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::clients::one_line_server;
use crate::support::dist::{dist, is_elf, platform, triple, Dist, VERSION};
use crate::support::{
    describe, ok, run, shell, shim_exe, ApiServer, Chat, Client, Input, RealCli, Sandbox,
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

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
struct User {
    server: ApiServer,
    sb: Sandbox,
    tools: PathBuf,
}

impl User {
    fn new(tools: &str) -> User {
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
    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
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
    fn sh(&self, script: &str) -> Command {
        let mut cmd = self.cmd("sh");
        cmd.args(["-c", script]);
        cmd
    }

    fn claude_shim(&self, args: &[&str]) -> Command {
        let mut cmd = self.cmd("claude-shim");
        cmd.args(args);
        cmd
    }

    /// The shim directory `install` uses by default.
    fn shim_dir(&self) -> PathBuf {
        self.sb.home.join(".local/share/claude-shim/bin")
    }

    /// `bash -c SCRIPT` in a shell that read `~/.bashrc` first, as a new
    /// terminal does.
    fn bash(&self, script: &str) -> Command {
        let mut cmd = self.cmd(shell("bash"));
        cmd.args(["-c", &format!(". \"$HOME/.bashrc\"\n{script}"), "bash"]);
        cmd
    }

    /// `claude-shim install`: `claude` must be a link to `native` (an ELF
    /// file), and the rc line it prints goes into `~/.bashrc`. Returns the
    /// command it says removes the package.
    fn install(&self, native: &Path) -> String {
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
    fn converse(&self) {
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
    fn doctor_is_clean(&self) {
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
    fn removal_leaves_an_inert_link(&self, remove: &str, gone: &Path) {
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
        let rm = fix.split("   (or").next().unwrap_or_default();
        assert_eq!(rm, format!("rm {}", link.display()), "{report:#}");
        ok(self.sh(rm));
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the fix removed it"
        );
    }
}

/// `npm install -g --prefix <tools>/..` of every tarball in dist/.
fn npm_install(u: &User, dist: &Dist, extra: &[&str]) -> PathBuf {
    let prefix = u.tools.parent().expect("prefix").to_path_buf();
    let mut npm = u.cmd("npm");
    npm.args([
        "install",
        "-g",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--prefix",
    ])
    .arg(&prefix)
    .args(extra)
    .args(&dist.npm);
    ok(npm);
    prefix.join("lib/node_modules")
}

fn version_is_cargos(u: &User) {
    let out = ok(u.claude_shim(&["--version"]));
    assert_eq!(out.trim(), format!("claude-shim {VERSION}"));
}

#[test]
fn npm_package_puts_the_native_binary_on_path() {
    let dist = dist();
    let u = User::new("npm/bin");
    let modules = npm_install(&u, &dist, &[]);
    // The postinstall put the binary in the launcher's place.
    let bin = modules.join("claude-shim/bin/claude-shim");
    assert!(
        is_elf(&u.tools.join("claude-shim")),
        "claude-shim on PATH is native"
    );
    version_is_cargos(&u);
    let remove = u.install(&bin);
    assert_eq!(
        remove,
        format!(
            "npm uninstall -g --prefix {} claude-shim",
            u.tools.parent().unwrap().display()
        )
    );
    u.converse();
    u.doctor_is_clean();
    // dist/'s platform tarball is a package of its own here (from the
    // registry it is claude-shim's dependency and goes with it).
    let remove = format!("{remove} @claude-shim/{}", platform());
    u.removal_leaves_an_inert_link(&remove, &u.tools.join("claude-shim"));
}

#[test]
fn npm_package_without_install_scripts_runs_the_node_launcher() {
    let dist = dist();
    let u = User::new("npm/bin");
    let modules = npm_install(&u, &dist, &["--ignore-scripts"]);
    let launcher = std::fs::read_to_string(u.tools.join("claude-shim")).unwrap_or_default();
    assert!(launcher.starts_with("#!/usr/bin/env node"), "{launcher}");
    version_is_cargos(&u);
    // Exit statuses come through the launcher.
    let bad = run(u.claude_shim(&["no-such-command"]), Input::Null);
    let mut direct = u.cmd(shim_exe());
    direct.arg("no-such-command");
    let direct = run(direct, Input::Null);
    assert_eq!(
        (bad.status.code(), bad.err()),
        (direct.status.code(), direct.err())
    );
    // Started through Node, the binary still links `claude` to itself.
    let native = modules.join(format!("@claude-shim/{}/bin/claude-shim", platform()));
    u.install(&native);
    u.doctor_is_clean();

    // `claude-shim uninstall` first, then the command it names: nothing left.
    let out = ok(u.claude_shim(&["uninstall"]));
    let remove = out
        .lines()
        .skip_while(|l| !l.contains("installed by npm"))
        .nth(1)
        .unwrap_or_else(|| panic!("uninstall names no npm command: {out}"))
        .trim();
    ok(u.sh(remove));
    assert!(
        std::fs::symlink_metadata(u.shim_dir().join("claude")).is_err(),
        "{out}"
    );
    assert!(!u.shim_dir().exists(), "{out}");
    assert!(
        !modules.join("claude-shim").exists() && !native.exists(),
        "{remove}"
    );
    assert!(std::fs::symlink_metadata(u.tools.join("claude-shim")).is_err());
}

#[test]
fn wheel_installs_the_native_binary_with_pip() {
    let dist = dist();
    let u = User::new("venv/bin");
    let venv = u.tools.parent().expect("venv");
    let python = Path::new(ROOT).join(".ci/cache/maturin/bin/python");
    assert!(
        python.exists(),
        "{} missing: run .ci/install-maturin (.ci/test does)",
        python.display()
    );
    let mut make = u.cmd(&python);
    make.args(["-m", "venv"]).arg(venv);
    ok(make);
    let mut pip = u.cmd(venv.join("bin/pip"));
    pip.args([
        "install",
        "--no-index",
        "--no-deps",
        "--disable-pip-version-check",
    ])
    .arg(&dist.wheel);
    ok(pip);
    let bin = u.tools.join("claude-shim");
    assert!(is_elf(&bin));
    version_is_cargos(&u);
    let remove = u.install(&bin);
    assert_eq!(
        remove,
        format!("{}/bin/python -m pip uninstall claude-shim", venv.display())
    );
    u.converse();
    u.doctor_is_clean();
    u.removal_leaves_an_inert_link(&format!("{remove} -y"), &bin);
}

/// Every package carries one build (the same bytes): npm's, the wheel's, and
/// the release asset at the path Cargo.toml's cargo-binstall templates name;
/// and the wheel's platform tag is the one its glibc symbol versions allow
/// (auditwheel's reading).
#[test]
fn the_packages_carry_one_binary_and_the_wheel_tag_is_truthful() {
    let dist = dist();
    let t = tempfile::tempdir().unwrap();
    let tools = Path::new(ROOT).join(".ci/cache/maturin/bin");
    let from_wheel = t.path().join("from-wheel");
    let mut unzip = Command::new(tools.join("python"));
    unzip
        .arg("-c")
        .arg("import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))")
        .arg(&dist.wheel)
        .arg(format!("claude_shim-{VERSION}.data/scripts/claude-shim"))
        .arg(&from_wheel);
    ok(unzip);
    let untar = |archive: &Path, member: &str| {
        let mut tar = Command::new("tar");
        tar.arg("-xzf")
            .arg(archive)
            .arg("-C")
            .arg(t.path())
            .arg(member);
        ok(tar);
        std::fs::read(t.path().join(member)).unwrap()
    };
    let npm = untar(&dist.npm[1], "package/bin/claude-shim");
    assert!(
        npm == std::fs::read(&from_wheel).unwrap(),
        "npm and the wheel differ"
    );

    // cargo-binstall: `{ repo }/releases/download/v{ version }/<asset>`, the
    // binary at bin-dir inside it.
    let manifest: toml::Table = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let meta = &manifest["package"]["metadata"]["binstall"];
    let fill = |template: &str| {
        template
            .replace("{ name }", "claude-shim")
            .replace("{ bin }", "claude-shim")
            .replace("{ binary-ext }", "")
            .replace("{ version }", VERSION)
            .replace("{ target }", &triple())
    };
    let asset = dist
        .binstall
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let url = fill(meta["pkg-url"].as_str().expect("pkg-url"));
    assert_eq!(
        url,
        format!("{{ repo }}/releases/download/v{VERSION}/{asset}")
    );
    assert_eq!(meta["pkg-fmt"].as_str(), Some("tgz"));
    let bin_dir = fill(meta["bin-dir"].as_str().expect("bin-dir"));
    assert!(
        untar(&dist.binstall, &bin_dir) == npm,
        "the binstall asset differs"
    );

    let tag = dist
        .wheel
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let tag = tag
        .rsplit('-')
        .next()
        .unwrap()
        .trim_end_matches(".whl")
        .to_owned();
    let mut show = Command::new(tools.join("auditwheel"));
    show.arg("show").arg(&dist.wheel);
    let shown = ok(show).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        shown.contains(&format!(
            "consistent with the following platform tag: \"{tag}\""
        )),
        "tagged {tag}; auditwheel: {shown}"
    );
}

/// The sdist holds what cargo needs to build the binary: its manifest, lock
/// file and every target resolve offline on their own.
#[test]
fn the_sdist_is_a_complete_cargo_package() {
    let dist = dist();
    let t = tempfile::tempdir().unwrap();
    ok({
        let mut c = Command::new("tar");
        c.arg("-xzf").arg(&dist.sdist).arg("-C").arg(t.path());
        c
    });
    let src = t.path().join(format!("claude_shim-{VERSION}"));
    let pkg_info = std::fs::read_to_string(src.join("PKG-INFO")).unwrap_or_default();
    assert!(
        pkg_info.contains(&format!("\nVersion: {VERSION}\n")),
        "{pkg_info}"
    );
    for file in ["pyproject.toml", "Cargo.lock", "src/main.rs", "src/lib.rs"] {
        assert!(src.join(file).is_file(), "{file} missing from the sdist");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut metadata = Command::new(cargo);
    metadata
        .args([
            "metadata",
            "--locked",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(src.join("Cargo.toml"));
    let meta: Value = serde_json::from_str(&ok(metadata)).unwrap();
    let bins: Vec<&Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "claude-shim")
        .flat_map(|p| p["targets"].as_array().unwrap())
        .filter(|t| t["kind"][0] == "bin")
        .collect();
    assert_eq!(bins.len(), 1, "{bins:?}");
}
