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
use crate::support::{
    describe, ok, run, shell, shim_exe, ApiServer, Chat, Client, Input, RealCli, Sandbox,
};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The npm platform key of this machine (`npm/claude-shim/lib/platform.js`).
fn platform() -> String {
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let libc = if cfg!(target_os = "linux") {
        "-gnu"
    } else {
        ""
    };
    format!("{}-{cpu}{libc}", std::env::consts::OS)
}

/// The packages in `dist/`, at Cargo.toml's version.
struct Dist {
    npm: Vec<PathBuf>,
    wheel: PathBuf,
    sdist: PathBuf,
}

/// `dist/` as `.ci/package` leaves it; panics with the command to run when
/// it is missing or holds another version.
fn dist() -> Dist {
    let dir = Path::new(ROOT).join("dist");
    let run_it = "run `.ci/package` (.ci/test runs it before the tests)";
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no packages: {} ({e}); {run_it}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let want = [
        format!("claude-shim-{VERSION}.tgz"),
        format!("claude-shim-{}-{VERSION}.tgz", platform()),
        format!("claude_shim-{VERSION}.tar.gz"),
    ];
    let wheel = names.iter().find(|n| {
        n.starts_with(&format!("claude_shim-{VERSION}-py3-none-")) && n.ends_with(".whl")
    });
    let missing: Vec<&String> = want.iter().filter(|w| !names.contains(w)).collect();
    if !missing.is_empty() || wheel.is_none() {
        panic!(
            "dist/ is missing or stale: Cargo.toml says {VERSION}, dist/ holds {names:?} \
             (missing {missing:?}{}); {run_it}",
            if wheel.is_none() {
                " and the wheel"
            } else {
                ""
            }
        );
    }
    Dist {
        npm: want[..2].iter().map(|n| dir.join(n)).collect(),
        wheel: dir.join(wheel.expect("checked")),
        sdist: dir.join(&want[2]),
    }
}

/// A file starting with the ELF magic: a native binary, not a script.
fn is_elf(path: &Path) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes.starts_with(b"\x7fELF")
}

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

/// Both registries carry one build (the same bytes), and the wheel's platform
/// tag is the one its glibc symbol versions allow (auditwheel's reading).
#[test]
fn the_packages_carry_one_binary_and_the_wheel_tag_is_truthful() {
    let dist = dist();
    let t = tempfile::tempdir().unwrap();
    let python = Path::new(ROOT).join(".ci/cache/maturin/bin/python");
    let from_wheel = t.path().join("wheel");
    let script = "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
                  open(sys.argv[3], 'wb').write(z.read(sys.argv[2]))";
    let member = format!("claude_shim-{VERSION}.data/scripts/claude-shim");
    ok({
        let mut c = Command::new(&python);
        c.args(["-c", script])
            .arg(&dist.wheel)
            .arg(&member)
            .arg(&from_wheel);
        c
    });
    ok({
        let mut c = Command::new("tar");
        c.arg("-xzf")
            .arg(&dist.npm[1])
            .arg("-C")
            .arg(t.path())
            .arg("package/bin/claude-shim");
        c
    });
    let from_npm = std::fs::read(t.path().join("package/bin/claude-shim")).unwrap();
    assert!(
        from_npm == std::fs::read(&from_wheel).unwrap(),
        "npm and the wheel differ"
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
    let shown = ok({
        let mut c = Command::new(Path::new(ROOT).join(".ci/cache/maturin/bin/auditwheel"));
        c.arg("show").arg(&dist.wheel);
        c
    });
    let shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
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
