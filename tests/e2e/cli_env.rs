//! Every environment variable the pinned Claude Code CLI reads is classified in
//! `src/cli_env.rs`: the names `cli_env::names_read_by` finds in the CLI's
//! JavaScript bundle (inside the platform binary the npm package installs)
//! all have a class. A new release that reads a new variable fails here until
//! it is classified: unclassified, it would count for nothing in a
//! conversation's scope. The CLI is `$CLAUDE_SHIM_TEST_CLI`, else the pinned
//! install (`.ci/install-cli`); fails, never skips, without it.

use std::path::{Path, PathBuf};

use crate::support::bundle::names_read_by;
use claude_shim::cli_env::class_of;

/// A bundle at least this large is the CLI itself (a native binary is
/// hundreds of MiB, a 1.x `cli.js` about 10); anything smaller is npm's
/// placeholder or a launcher.
const BUNDLE_MIN_BYTES: u64 = 1 << 20;

/// Fewer names than this means the extraction broke, not that the CLI reads
/// so few (2.1.302 reads about 1,450).
const PLAUSIBLE_NAMES: usize = 200;

/// `$CLAUDE_SHIM_TEST_CLI`, else the pinned install's `.bin/claude`.
fn cli() -> PathBuf {
    match std::env::var_os("CLAUDE_SHIM_TEST_CLI") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/cache/cli/node_modules/.bin/claude"),
    }
}

/// The file that holds the CLI's JavaScript. `.bin/claude` links to the
/// package's `bin/claude.exe`, which its postinstall replaced with (a hard
/// link to) the platform package's native binary; without the postinstall it
/// is a small placeholder, and the binary is the platform package's `claude`
/// beside the package (`@anthropic-ai/claude-code-linux-x64/claude`) or in its
/// own `node_modules`. A 1.x release links `.bin/claude` to `cli.js`, itself
/// the bundle.
fn bundle(cli: &Path) -> PathBuf {
    let real = std::fs::canonicalize(cli).unwrap_or_else(|e| {
        panic!(
            "Claude Code CLI not found at {} ({e}).\nRun `.ci/install-cli` from the repository \
             root, or point CLAUDE_SHIM_TEST_CLI at a `claude`.",
            cli.display()
        )
    });
    if size(&real) >= BUNDLE_MIN_BYTES {
        return real;
    }
    // The placeholder: <scope>/claude-code/bin/claude.exe.
    let package = real.parent().and_then(Path::parent).unwrap_or_else(|| {
        panic!(
            "{} is a {}-byte launcher outside any package",
            real.display(),
            size(&real)
        )
    });
    let scopes = [
        package.parent().map(Path::to_path_buf),
        Some(package.join("node_modules/@anthropic-ai")),
    ];
    let mut dirs = Vec::new();
    for scope in scopes.iter().flatten() {
        let Ok(entries) = std::fs::read_dir(scope) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("claude-code-") {
                dirs.push((name, entry.path()));
            }
        }
    }
    dirs.sort();
    let platform = platform();
    let exact = format!("claude-code-{platform}");
    let mut found: Vec<PathBuf> = dirs
        .iter()
        .filter(|(name, _)| name.starts_with(&exact))
        .flat_map(|(_, dir)| [dir.join("claude"), dir.join("claude.exe")])
        .filter(|p| size(p) >= BUNDLE_MIN_BYTES)
        .collect();
    // The glibc build before the musl one when both are installed.
    found.sort_by_key(|p| p.parent().map(|d| !d.ends_with(&exact)));
    found.into_iter().next().unwrap_or_else(|| {
        panic!(
            "{} is a {}-byte placeholder and no platform package ({exact}) holds the native \
             binary beside it (found: {:?}); reinstall with `.ci/install-cli`",
            real.display(),
            size(&real),
            dirs.iter().map(|(name, _)| name).collect::<Vec<_>>()
        )
    })
}

/// npm's name for this machine: `linux-x64`, `darwin-arm64`, `win32-x64`…
fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{arch}")
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn every_variable_the_cli_reads_is_classified() {
    let cli = cli();
    let bundle = bundle(&cli);
    let bytes = std::fs::read(&bundle).unwrap_or_else(|e| {
        panic!(
            "read {} (the CLI at {}): {e}",
            bundle.display(),
            cli.display()
        )
    });
    let names = names_read_by(&bytes);
    assert!(
        names.len() > PLAUSIBLE_NAMES,
        "names_read_by found only {} names in {} (the CLI at {}): the extraction no longer \
         matches how this CLI reads its environment (src/cli_env.rs)",
        names.len(),
        bundle.display(),
        cli.display()
    );
    let unclassified: Vec<&String> = names.iter().filter(|n| class_of(n).is_none()).collect();
    assert!(
        unclassified.is_empty(),
        "{} of the {} environment variables the CLI at {} ({}) reads have no class: {}.\n\
         Classify them in src/cli_env.rs (Credential, Shaping or Inert).",
        unclassified.len(),
        names.len(),
        cli.display(),
        bundle.display(),
        unclassified
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
