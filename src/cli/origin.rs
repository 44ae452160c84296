//! Which package manager put this binary where it is, and the command that
//! removes it: what `uninstall` tells the user to run last (none of npm,
//! pip, uv or cargo can remove the `claude` link `install` made, as none
//! runs a package's code on removal). Read from the binary's resolved path
//! and a few files beside it; the decision is pure.

use crate::text::quote;
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// How the binary was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "by")]
pub enum Origin {
    /// `npm install -g --prefix <prefix>`, or a project's own node_modules
    /// (`global: false`). `platform`: the platform package this binary came
    /// from, when npm installed it beside claude-shim rather than inside it.
    Npm {
        prefix: PathBuf,
        global: bool,
        platform: Option<String>,
    },
    /// pnpm's store.
    Pnpm,
    /// A tool environment of `uv tool install`.
    Uv,
    /// A tool environment of `pipx install`.
    Pipx,
    /// pip, into a virtual environment (its root) or a Python prefix (None).
    Pip { venv: Option<PathBuf> },
    /// `cargo install` into `root` (None: the default root).
    Cargo { root: Option<PathBuf> },
    /// Built or copied by hand.
    Unknown,
}

/// What the files beside the binary say (see [`of`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Beside {
    /// `<bin>/../pyvenv.cfg`: the binary is in a virtual environment.
    pub venv: bool,
    /// `<bin>/../lib/python*/site-packages/claude_shim-*.dist-info`.
    pub dist_info: bool,
    /// `<bin>/../.crates.toml` or `.crates2.json`: a `cargo install` root.
    pub cargo_root: bool,
    /// That root is cargo's default (`$CARGO_HOME`, else `~/.cargo`).
    pub default_cargo_root: bool,
}

/// Look at the files beside `exe` (a resolved path), then decide.
pub fn detect(exe: &Path) -> Origin {
    let root = exe.parent().and_then(Path::parent);
    let beside = root.map_or(Beside::default(), |root| {
        let cargo_home =
            crate::env::cargo_home().or_else(|| crate::env::user_home().map(|h| h.join(".cargo")));
        Beside {
            venv: root.join("pyvenv.cfg").is_file(),
            dist_info: has_dist_info(root),
            cargo_root: root.join(".crates.toml").is_file() || root.join(".crates2.json").is_file(),
            default_cargo_root: cargo_home
                .and_then(|h| h.canonicalize().ok())
                .is_some_and(|h| h == root),
        }
    });
    of(exe, beside)
}

fn has_dist_info(root: &Path) -> bool {
    let pythons = std::fs::read_dir(root.join("lib")).into_iter().flatten();
    pythons.flatten().any(|python| {
        let site = python.path().join("site-packages");
        let entries = std::fs::read_dir(site).into_iter().flatten().flatten();
        entries
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .any(|n| n.starts_with("claude_shim-") && n.ends_with(".dist-info"))
    })
}

/// The decision, over the binary's resolved path and what lies beside it.
pub fn of(exe: &Path, beside: Beside) -> Origin {
    if let Some(origin) = node(exe) {
        return origin;
    }
    let root = exe.parent().and_then(Path::parent);
    let names: Vec<String> = exe
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let holds = |a: &str, b: &str| names.windows(3).any(|w| w[0] == a && w[1] == b);
    if beside.venv && holds("uv", "tools") {
        return Origin::Uv;
    }
    if beside.venv && holds("pipx", "venvs") {
        return Origin::Pipx;
    }
    if beside.venv {
        return Origin::Pip {
            venv: root.map(Path::to_path_buf),
        };
    }
    if beside.dist_info {
        return Origin::Pip { venv: None };
    }
    if beside.cargo_root {
        return Origin::Cargo {
            root: root
                .filter(|_| !beside.default_cargo_root)
                .map(Path::to_path_buf),
        };
    }
    Origin::Unknown
}

/// npm's layouts: `<prefix>/lib/node_modules/claude-shim/bin/claude-shim`
/// (global), `<dir>/node_modules/…` (a project), with the platform package
/// `@claude-shim/<platform>` inside claude-shim's node_modules or beside it.
fn node(exe: &Path) -> Option<Origin> {
    let parts: Vec<Component> = exe.components().collect();
    let at = parts.iter().position(|c| c.as_os_str() == "node_modules")?;
    let next = parts.get(at + 1)?.as_os_str().to_string_lossy();
    if next == ".pnpm" {
        return Some(Origin::Pnpm);
    }
    let platform = match next.as_ref() {
        "claude-shim" => None,
        "@claude-shim" => Some(format!(
            "@claude-shim/{}",
            parts.get(at + 2)?.as_os_str().to_string_lossy()
        )),
        _ => return None,
    };
    let dir: PathBuf = parts[..at].iter().collect();
    let global = dir.file_name().is_some_and(|n| n == "lib");
    let prefix = if global {
        dir.parent()?.to_path_buf()
    } else {
        dir
    };
    Some(Origin::Npm {
        prefix,
        global,
        platform,
    })
}

impl Origin {
    /// Who installed it, for people.
    pub fn name(&self) -> &'static str {
        match self {
            Origin::Npm { .. } => "npm",
            Origin::Pnpm => "pnpm",
            Origin::Uv => "uv",
            Origin::Pipx => "pipx",
            Origin::Pip { .. } => "pip",
            Origin::Cargo { .. } => "cargo",
            Origin::Unknown => "unknown",
        }
    }

    /// The command that removes the binary `exe` (shell-quoted).
    pub fn remove_command(&self, exe: &Path) -> String {
        let q = |p: &Path| quote::posix(&p.to_string_lossy());
        match self {
            Origin::Npm {
                prefix,
                global,
                platform,
            } => {
                let g = if *global { "-g " } else { "" };
                let extra = platform.as_ref().map_or(String::new(), |p| format!(" {p}"));
                format!("npm uninstall {g}--prefix {} claude-shim{extra}", q(prefix))
            }
            Origin::Pnpm => "pnpm remove -g claude-shim".into(),
            Origin::Uv => "uv tool uninstall claude-shim".into(),
            Origin::Pipx => "pipx uninstall claude-shim".into(),
            Origin::Pip { venv: Some(venv) } => {
                format!(
                    "{} -m pip uninstall claude-shim",
                    q(&venv.join("bin/python"))
                )
            }
            Origin::Pip { venv: None } => "python3 -m pip uninstall claude-shim".into(),
            Origin::Cargo { root: None } => "cargo uninstall claude-shim".into(),
            Origin::Cargo { root: Some(root) } => {
                format!("cargo uninstall --root {} claude-shim", q(root))
            }
            Origin::Unknown => format!("rm {}", q(exe)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn venv() -> Beside {
        Beside {
            venv: true,
            ..Beside::default()
        }
    }

    #[test]
    fn tells_each_installer_and_its_remove_command() {
        let none = Beside::default();
        let cargo = |default| Beside {
            cargo_root: true,
            default_cargo_root: default,
            ..Beside::default()
        };
        let pip_user = Beside {
            dist_info: true,
            ..Beside::default()
        };
        let cases: &[(&str, Beside, &str, &str)] = &[
            (
                "/usr/local/lib/node_modules/claude-shim/bin/claude-shim",
                none,
                "npm",
                "npm uninstall -g --prefix /usr/local claude-shim",
            ),
            (
                "/h/.npm global/lib/node_modules/claude-shim/node_modules/@claude-shim/linux-x64-gnu/bin/claude-shim",
                none,
                "npm",
                "npm uninstall -g --prefix '/h/.npm global' claude-shim",
            ),
            (
                "/p/lib/node_modules/@claude-shim/linux-x64-gnu/bin/claude-shim",
                none,
                "npm",
                "npm uninstall -g --prefix /p claude-shim @claude-shim/linux-x64-gnu",
            ),
            (
                "/srv/app/node_modules/claude-shim/bin/claude-shim",
                none,
                "npm",
                "npm uninstall --prefix /srv/app claude-shim",
            ),
            (
                "/h/.local/share/pnpm/global/5/node_modules/.pnpm/claude-shim@0.1.0/node_modules/claude-shim/bin/claude-shim",
                none,
                "pnpm",
                "pnpm remove -g claude-shim",
            ),
            (
                "/h/.local/share/uv/tools/claude-shim/bin/claude-shim",
                venv(),
                "uv",
                "uv tool uninstall claude-shim",
            ),
            (
                "/h/.local/share/pipx/venvs/claude-shim/bin/claude-shim",
                venv(),
                "pipx",
                "pipx uninstall claude-shim",
            ),
            (
                "/srv/venv/bin/claude-shim",
                venv(),
                "pip",
                "/srv/venv/bin/python -m pip uninstall claude-shim",
            ),
            (
                "/h/.local/bin/claude-shim",
                pip_user,
                "pip",
                "python3 -m pip uninstall claude-shim",
            ),
            (
                "/h/.cargo/bin/claude-shim",
                cargo(true),
                "cargo",
                "cargo uninstall claude-shim",
            ),
            (
                "/opt/tools/bin/claude-shim",
                cargo(false),
                "cargo",
                "cargo uninstall --root /opt/tools claude-shim",
            ),
            (
                "/src/claude-shim/target/release/claude-shim",
                none,
                "unknown",
                "rm /src/claude-shim/target/release/claude-shim",
            ),
            // Someone else's node_modules is not npm's claude-shim.
            (
                "/x/node_modules/other/claude-shim",
                none,
                "unknown",
                "rm /x/node_modules/other/claude-shim",
            ),
        ];
        for (exe, beside, name, command) in cases {
            let origin = of(Path::new(exe), *beside);
            assert_eq!(origin.name(), *name, "{exe}");
            assert_eq!(origin.remove_command(Path::new(exe)), *command, "{exe}");
        }
    }

    #[test]
    fn reads_a_venv_and_a_cargo_root_from_disk() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("bin")).unwrap();
        let exe = root.join("bin/claude-shim");
        assert_eq!(detect(&exe), Origin::Unknown);
        std::fs::write(root.join(".crates2.json"), "{}").unwrap();
        assert_eq!(
            detect(&exe),
            Origin::Cargo {
                root: Some(root.clone())
            }
        );
        let site = root.join("lib/python3.12/site-packages/claude_shim-0.1.0.dist-info");
        std::fs::create_dir_all(site).unwrap();
        assert_eq!(detect(&exe), Origin::Pip { venv: None });
        std::fs::write(root.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(detect(&exe), Origin::Pip { venv: Some(root) });
    }
}
