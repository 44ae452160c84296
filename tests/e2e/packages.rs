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

use crate::support::dist::{dist, is_elf, platform, triple, Dist, VERSION};
use crate::support::{ok, run, shim_exe, Input};

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
    assert_eq!(bins.len(), 1, "{bins:?}");
}
