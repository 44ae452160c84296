//! The official Agent SDKs the real-client tests drive, pinned and installed by
//! `.ci/install-sdks` into `.ci/cache/sdk`, and our client programs for them
//! (`tests/clients/`). Missing installs fail the test, never skip it.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn installed(path: PathBuf, what: &str) -> PathBuf {
    if !path.exists() {
        panic!(
            "{what} not found at {}.\nRun `.ci/install-sdks` from the repository root (the test \
             command does) to install the pinned Agent SDKs.",
            path.display()
        );
    }
    path
}

/// The venv's python, with `claude-agent-sdk` installed.
pub fn python() -> PathBuf {
    installed(
        root().join(".ci/cache/sdk/py/bin/python"),
        "the Python Agent SDK",
    )
}

/// The TypeScript SDK's package directory (for `CLAUDE_AGENT_SDK_DIR`).
pub fn ts_package() -> PathBuf {
    installed(
        root().join(".ci/cache/sdk/ts/node_modules/@anthropic-ai/claude-agent-sdk"),
        "the TypeScript Agent SDK",
    )
}

/// Our Python client program.
pub fn py_client() -> PathBuf {
    root().join("tests/clients/sdk_client.py")
}

/// Our TypeScript (plain ESM JavaScript) client program.
pub fn ts_client() -> PathBuf {
    root().join("tests/clients/sdk_client.mjs")
}
