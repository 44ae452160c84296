//! Where the binaries under test live, and which Claude Code release they are.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A Claude Code release number, `major.minor.patch`, ordered as releases are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// `2.1.330` or `2.1.330 (Claude Code)`.
    pub fn parse(text: &str) -> Option<Version> {
        let word = text.split_whitespace().next()?;
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        let v = Version(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The real Claude Code CLI the e2e tests drive.
pub struct RealCli;

impl RealCli {
    /// `$CLAUDE_SHIM_TEST_CLI` if set, else
    /// `<CARGO_MANIFEST_DIR>/.ci/cache/cli/node_modules/.bin/claude` (installed by
    /// `.ci/install-cli`). Panics if the file is missing: e2e tests fail, never skip.
    pub fn path() -> PathBuf {
        let (path, origin) = match std::env::var_os("CLAUDE_SHIM_TEST_CLI") {
            // Absolute: sandboxes link to it from elsewhere.
            Some(p) if !p.is_empty() => (
                std::path::absolute(&p).unwrap_or_else(|_| PathBuf::from(&p)),
                "$CLAUDE_SHIM_TEST_CLI",
            ),
            _ => (
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(".ci/cache/cli/node_modules/.bin/claude"),
                "the pinned install",
            ),
        };
        if !path.is_file() {
            panic!(
                "real Claude Code CLI not found at {} ({origin}).\n\
                 Run `.ci/install-cli` from the repository root to install the pinned version \
                 ({}), or point CLAUDE_SHIM_TEST_CLI at a `claude` binary.",
                path.display(),
                Self::pinned_version(),
            );
        }
        path
    }

    /// The release of the CLI under test, from its `--version` (asked once).
    /// Tests whose assertions depend on a release's facts read it, and say why
    /// (docs/cli-versions.md lists the facts).
    pub fn version() -> Version {
        static VERSION: OnceLock<Version> = OnceLock::new();
        *VERSION.get_or_init(|| version_of(&Self::path()))
    }

    /// The pinned version from `.ci/claude-code-version`.
    pub fn pinned_version() -> String {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/claude-code-version");
        std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()))
            .trim()
            .to_string()
    }

    /// Whether the CLI under test is the pinned install (not an override).
    pub fn is_pinned_install() -> bool {
        match std::env::var_os("CLAUDE_SHIM_TEST_CLI") {
            Some(p) => p.is_empty(),
            None => true,
        }
    }

    /// The release pinned for `role` in `.ci/claude-code-versions-extra` and its
    /// binary, installed by `.ci/install-cli VERSION` into `.ci/cache/cli-VERSION`.
    /// Panics when either is missing: the tests that need it fail, never skip.
    pub fn extra(role: &str) -> (Version, PathBuf) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let file = root.join(".ci/claude-code-versions-extra");
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let version = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").split_whitespace())
            .find_map(|mut words| match (words.next(), words.next()) {
                (Some(r), Some(v)) if r == role => Some(v.to_owned()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no `{role}` release in {}", file.display()));
        let path = root.join(format!(".ci/cache/cli-{version}/node_modules/.bin/claude"));
        if !path.is_file() {
            panic!(
                "Claude Code {version} ({role}) not found at {}.\n\
                 Run `.ci/install-cli {version}` from the repository root.",
                path.display()
            );
        }
        let found = version_of(&path);
        assert_eq!(found.to_string(), version, "{}", path.display());
        (found, path)
    }
}

/// What `claude --version` says, parsed; panics when it says nothing usable.
fn version_of(cli: &Path) -> Version {
    let out = std::process::Command::new(cli)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {} --version: {e}", cli.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    Version::parse(&text).unwrap_or_else(|| {
        panic!(
            "{} --version printed {text:?} and on stderr {:?}, {}",
            cli.display(),
            String::from_utf8_lossy(&out.stderr),
            out.status
        )
    })
}

/// The shim binary under test: the one cargo built for this run, or
/// `CLAUDE_SHIM_TEST_BINARY` (.ci/test runs the e2e tests on the packaged build).
pub fn shim_exe() -> PathBuf {
    std::env::var_os("CLAUDE_SHIM_TEST_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-shim")))
}
