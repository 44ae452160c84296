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

use crate::support::dist::{dist, is_elf, linking, platform, triple, Dist, VERSION};
use crate::support::{describe, ok, run, shim_exe, Input};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

mod user;
use user::User;

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
    let consistent = shown
        .split("consistent with the following platform tag: \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("auditwheel: {shown}"));
    // A tag may be a compressed set (manylinux2014_x86_64.manylinux_2_17_x86_64).
    assert!(
        tag.split('.').any(|t| t == consistent),
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
    // One binary to build: the tests' fake CLI needs the `fake-cli` feature,
    // which only the crate's test and bench builds turn on.
    let (shipped, test_only): (Vec<&Value>, Vec<&Value>) = bins
        .iter()
        .partition(|t| t["required-features"].as_array().is_none_or(Vec::is_empty));
    assert_eq!(shipped.len(), 1, "{bins:?}");
    assert_eq!(shipped[0]["name"], "claude-shim", "{bins:?}");
    assert!(
        test_only.iter().all(|t| t["name"] == "fake-claude"
            && t["required-features"] == serde_json::json!(["fake-cli"])),
        "{bins:?}"
    );
}

/// On Linux the packages carry a static binary at a fixed address: nothing
/// for a dynamic loader to do at start (docs/performance.md: pass-through).
/// Its one name lookup, the store's, keeps to the NSS services linked into
/// it: a host name resolves through /etc/hosts, and a user only an NSS module
/// knows (here nsswitch.conf says `passwd: files systemd`, and the uid is not
/// in /etc/passwd) is an error the store reports — a static glibc that loaded
/// libnss_systemd would crash instead (SIGSEGV). Needs root: a mount
/// namespace for nsswitch.conf and a uid of no user.
#[test]
fn the_packaged_binary_is_static_and_its_store_lookups_load_no_nss_module() {
    let dist = dist();
    let t = tempfile::tempdir().unwrap();
    let asset = format!("claude-shim-{}-v{VERSION}", triple());
    ok({
        let mut tar = Command::new("tar");
        tar.arg("-xzf").arg(&dist.binstall).arg("-C").arg(t.path());
        tar
    });
    let bin = t.path().join(&asset).join("claude-shim");
    let how = linking(&bin);
    assert!(
        how.fixed_address && !how.dynamic_loader,
        "{} is not static at a fixed address: rebuild dist/ with .ci/package",
        bin.display()
    );
    // Root, or passwordless sudo (a CI runner's user).
    let root: &[&str] = if nix::unistd::geteuid().is_root() {
        &[]
    } else if Command::new("sudo")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        &["sudo", "-n"]
    } else {
        panic!("this test needs root or passwordless sudo (a mount namespace, a uid of no user)")
    };
    let module = PathBuf::from(format!(
        "/usr/lib/{}-linux-gnu/libnss_systemd.so.2",
        std::env::consts::ARCH
    ));
    assert!(
        module.exists(),
        "{} missing: install Debian's libnss-systemd (.ci/test does)",
        module.display()
    );

    let pg = crate::support::postgres::PgServer::start();
    let home = t.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let nsswitch = t.path().join("nsswitch.conf");
    std::fs::write(&nsswitch, "passwd: files systemd\nhosts: files dns\n").unwrap();
    const NOBODY_KNOWS: u32 = 54321;
    // The data directory is there (as after a first turn): `stats` opens
    // the store it names.
    let data = home.join(".local/share/claude-shim");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    for dir in [
        home.as_path(),
        &home.join(".local"),
        &home.join(".local/share"),
        &data,
    ] {
        std::os::unix::fs::chown(dir, Some(NOBODY_KNOWS), Some(NOBODY_KNOWS)).unwrap();
    }
    std::fs::set_permissions(
        t.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // `claude-shim stats --json` against `url`, as a uid /etc/passwd does not
    // know, with the nsswitch.conf above.
    let stats = |url: &str| {
        let mut cmd = Command::new("env");
        cmd.args(root)
            .args(["unshare", "--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount --bind \"$0\" /etc/nsswitch.conf && cd \"$2\" && \
                 exec setpriv --reuid {NOBODY_KNOWS} --regid {NOBODY_KNOWS} --clear-groups \
                 env -i PATH=/usr/bin:/bin HOME=\"$2\" CLAUDE_SHIM_STORE=\"$3\" \"$1\" stats --json"
            ))
            .arg(&nsswitch)
            .arg(&bin)
            .arg(&home)
            .arg(url)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        run(cmd, Input::Null)
    };
    // A host name, through /etc/hosts.
    let named = pg.url("postgres").replace("127.0.0.1", "localhost");
    let out = stats(&named);
    assert!(out.status.success(), "{named}: {}", describe(&out));
    serde_json::from_str::<Value>(&out.out()).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    // No user in the URL: the default is this uid's name, which only
    // libnss_systemd could give.
    let userless = named.replace("shim@", "");
    let out = stats(&userless);
    assert_eq!(
        (out.status.code(), out.out().is_empty()),
        (Some(1), true),
        "{userless}: {}",
        describe(&out)
    );
    assert!(out.err().contains("store"), "{}", describe(&out));
}
