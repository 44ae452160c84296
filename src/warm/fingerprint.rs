//! What a live process took in when it started, that a cold start would read
//! afresh: the environment, and the files Claude Code reads at start-up
//! (checked with strace on 2.1.330): settings, instruction files
//! (CLAUDE.md, AGENTS.md…) in every directory from the cwd up, `.mcp.json`,
//! agents, commands, skills, plugins. A live process does not re-read most of
//! them, so a change to any means the next turn runs cold.
//!
//! Files are fingerprinted by path, size and mtime (a stat each, no reads).

use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Variables left out of the environment's hash: set per command by shells,
/// or the shim's own knobs (the CLI does not read them).
fn volatile(name: &str) -> bool {
    matches!(name, "_" | "OLDPWD" | "SHLVL") || name.starts_with("CLAUDE_SHIM_")
}

/// A hash of the environment that reaches the CLI.
pub fn environment(vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> String {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = vars
        .filter(|(k, _)| !volatile(&k.to_string_lossy()))
        .collect();
    vars.sort();
    let mut h = Sha256::new();
    for (k, v) in vars {
        h.update(k.as_encoded_bytes());
        h.update([0]);
        h.update(v.as_encoded_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

/// Instruction and config names looked for in every directory from the cwd up.
const PER_DIR: &[&str] = &[
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    ".claude/CLAUDE.md",
    ".claude/AGENTS.md",
    ".mcp.json",
    ".claude/agents",
    ".claude/commands",
    ".claude/skills",
    ".claude/workflows",
    ".claude/output-styles",
    ".claude/rules",
];

/// In the cwd only.
const IN_CWD: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/scheduled_tasks.json",
];

/// Under the Claude config dir (`~/.claude`).
const IN_CONFIG: &[&str] = &[
    "settings.json",
    "settings.local.json",
    "CLAUDE.md",
    "rules",
    "agents",
    "commands",
    "skills",
    "workflows",
    "output-styles",
    "themes",
    "plugins/installed_plugins.json",
    "plugins/installed_plugins_v2.json",
    "plugins/known_marketplaces.json",
    "plugins/known_marketplaces_claudeai.json",
    ".config.json",
];

/// Machine-wide (managed) settings.
const MANAGED: &[&str] = &[
    "/etc/claude-code/managed-settings.json",
    "/etc/claude-code/managed-settings.d",
    "/etc/claude-code/managed-mcp.json",
    "/etc/claude-code/CLAUDE.md",
    "/etc/claude-code/.claude",
];

/// Every path whose state a start-up depends on, for this cwd, home and
/// config dir.
pub fn paths(cwd: &Path, home: Option<&Path>, config_dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        out.extend(PER_DIR.iter().map(|n| dir.join(n)));
    }
    out.extend(IN_CWD.iter().map(|n| cwd.join(n)));
    out.extend(IN_CONFIG.iter().map(|n| config_dir.join(n)));
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    out.push(config_dir.join("projects").join(slug).join("memory"));
    out.extend(MANAGED.iter().map(PathBuf::from));
    let _ = home;
    out
}

/// The parts of `~/.claude.json` a start takes in: the user's MCP servers,
/// and this project's (and its tool permissions). The CLI rewrites the rest
/// of the file as it runs (counters, last costs), so only these are hashed.
pub fn user_config(home: Option<&Path>, cwd: &Path) -> String {
    let Some(text) = home.and_then(|h| std::fs::read(h.join(".claude.json")).ok()) else {
        return "-".into();
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return hex::encode(&Sha256::digest(&text)[..8]);
    };
    let project = &v["projects"][cwd.to_string_lossy().as_ref()];
    let taken = serde_json::json!({
        "mcpServers": v["mcpServers"],
        "project": {
            "mcpServers": project["mcpServers"],
            "enabledMcpjsonServers": project["enabledMcpjsonServers"],
            "disabledMcpjsonServers": project["disabledMcpjsonServers"],
            "enableAllProjectMcpServers": project["enableAllProjectMcpServers"],
            "allowedTools": project["allowedTools"],
        },
    });
    hex::encode(&Sha256::digest(taken.to_string().as_bytes())[..8])
}

/// The state of everything a start reads from files, for this cwd, home and
/// config dir: [`files`] of [`paths`] and the [`user_config`] parts.
pub fn start_up(cwd: &Path, home: Option<&Path>, config_dir: &Path) -> String {
    files(&paths(cwd, home, config_dir)) + &user_config(home, cwd)
}

/// Directory entries looked at per directory tree, at most.
const TREE_CAP: usize = 512;

/// A hash of the state (kind, size, mtime) of `paths`; directories down to
/// a few levels.
pub fn files(paths: &[PathBuf]) -> String {
    let mut h = Sha256::new();
    for p in paths {
        h.update(p.as_os_str().as_encoded_bytes());
        state(&mut h, p);
        if p.is_dir() {
            let mut seen = 0;
            tree(&mut h, p, 3, &mut seen);
        }
    }
    hex::encode(&h.finalize()[..16])
}

fn state(h: &mut Sha256, p: &Path) {
    match std::fs::metadata(p) {
        Ok(m) => {
            h.update(if m.is_dir() { b"d" } else { b"f" });
            h.update(m.size().to_le_bytes());
            h.update(m.mtime().to_le_bytes());
            h.update(m.mtime_nsec().to_le_bytes());
        }
        Err(_) => h.update(b"-"),
    }
}

fn tree(h: &mut Sha256, dir: &Path, depth: usize, seen: &mut usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for e in entries {
        if *seen >= TREE_CAP {
            return;
        }
        *seen += 1;
        h.update(e.as_os_str().as_encoded_bytes());
        state(h, &e);
        if depth > 0 && e.is_dir() {
            tree(h, &e, depth - 1, seen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_ignores_only_volatile_variables() {
        let env = |extra: &[(&str, &str)]| {
            let mut v: Vec<(std::ffi::OsString, std::ffi::OsString)> =
                vec![("PATH".into(), "/bin".into()), ("HOME".into(), "/h".into())];
            v.extend(extra.iter().map(|(k, x)| ((*k).into(), (*x).into())));
            environment(v.into_iter())
        };
        let base = env(&[]);
        assert_eq!(
            base,
            env(&[
                ("_", "/usr/bin/x"),
                ("SHLVL", "3"),
                ("CLAUDE_SHIM_GUARD", "1:2")
            ])
        );
        assert_ne!(base, env(&[("ANTHROPIC_MODEL", "x")]));
        assert_ne!(base, env(&[("PATH", "/usr/bin")]));
    }

    #[test]
    fn any_start_up_file_changing_changes_the_fingerprint() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("a/b");
        std::fs::create_dir_all(&cwd).unwrap();
        let config = t.path().join("config");
        let all = paths(&cwd, Some(t.path()), &config);
        let before = files(&all);
        assert_eq!(before, files(&all), "stable");
        // An instruction file two levels up appears.
        std::fs::write(t.path().join("a/CLAUDE.md"), "be brief").unwrap();
        let after = files(&all);
        assert_ne!(before, after);
        // An agent file added deep inside the config dir's agents tree.
        std::fs::create_dir_all(config.join("agents/x")).unwrap();
        let with_dir = files(&all);
        assert_ne!(after, with_dir);
        std::fs::write(config.join("agents/x/a.md"), "agent").unwrap();
        assert_ne!(with_dir, files(&all));
    }
}
