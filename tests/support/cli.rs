//! Where the binaries under test live.

use std::path::{Path, PathBuf};

/// The real Claude Code CLI the e2e tests drive.
pub struct RealCli;

impl RealCli {
    /// `$CLAUDE_SHIM_TEST_CLI` if set, else
    /// `<CARGO_MANIFEST_DIR>/.ci/cache/cli/node_modules/.bin/claude` (installed by
    /// `.ci/install-cli`). Panics if the file is missing: e2e tests fail, never skip.
    pub fn path() -> PathBuf {
        let (path, origin) = match std::env::var_os("CLAUDE_SHIM_TEST_CLI") {
            Some(p) if !p.is_empty() => (PathBuf::from(p), "$CLAUDE_SHIM_TEST_CLI"),
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
}

/// The shim binary built by cargo for this test run.
pub fn shim_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-shim"))
}
