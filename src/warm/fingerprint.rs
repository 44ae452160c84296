//! What a start-up takes in, that a later start would read afresh: the
//! environment, and the files Claude Code reads at start-up (checked with
//! strace on 2.1.330): settings, instruction files (CLAUDE.md, AGENTS.md…)
//! in every directory from the cwd up, `.mcp.json`, agents, commands,
//! skills, plugins (their caches included), credentials, and every file or
//! directory a flag names (`--settings FILE`, `--mcp-config`, `--plugin-dir`,
//! `--append-system-prompt-file`, …). A live process does not re-read most of
//! them, so a change to any means the next turn runs cold; and the answer to
//! `initialize` the shim remembers is given only for the very same contents.
//!
//! Two fingerprints of the same paths, whole trees each:
//! - [`StartUp::state`], by stat (kind, size, inode, mtime and ctime — the
//!   ctime no one can set back): a warm turn's check, with no reads;
//! - [`StartUp::contents`], by the bytes of every file: what a remembered
//!   answer is keyed on.
//!
//! Either is `None` past a bound (entries, bytes) or when a tree cannot be
//! read: then nothing is assumed (the turn runs cold, the CLI answers).

use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Variables left out of the environment's hash: set per command by shells,
/// or the shim's own knobs (the CLI does not read them) — but for the
/// tenant scope, which says whose the call is.
fn volatile(name: &str) -> bool {
    matches!(name, "_" | "OLDPWD" | "SHLVL")
        || (name.starts_with("CLAUDE_SHIM_") && name != crate::env::SCOPE)
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
    // The git state behind the start's git-status block (branch, status,
    // recent commits): moved by a commit, a checkout, an add.
    ".git/HEAD",
    ".git/index",
    ".git/logs/HEAD",
    ".git/packed-refs",
];

/// Under the home directory: the shell start-up files behind the CLI's shell
/// snapshot (aliases, functions, PATH its Bash tool runs with).
const IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish/config.fish",
];

/// System-wide shell start-up files.
const SYSTEM_SHELL: &[&str] = &[
    "/etc/profile",
    "/etc/bash.bashrc",
    "/etc/zshrc",
    "/etc/zsh/zshrc",
    "/etc/zsh/zshenv",
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
    "plugins/cache",
    "plugins/marketplaces",
    ".config.json",
    ".credentials.json",
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
/// config dir (the files flags name aside: see [`StartUp::of`]).
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
    if let Some(home) = home {
        out.extend(IN_HOME.iter().map(|n| home.join(n)));
    }
    out.extend(SYSTEM_SHELL.iter().map(PathBuf::from));
    out
}

/// How deep `@`-imports are followed (as the CLI follows them: five hops).
const IMPORT_DEPTH: usize = 5;
/// Imported paths kept, at most.
const MAX_IMPORTS: usize = 256;

/// Every path the instruction files among `paths` `@`-import, transitively
/// (relative to the importing file, `~/` from home; not inside code spans
/// or fenced blocks): a start reads them, so they are inputs as much as the
/// files that name them. A named file that does not exist is kept too — its
/// appearing changes what a start reads.
pub fn imports(paths: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut frontier: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .cloned()
        .collect();
    for _ in 0..IMPORT_DEPTH {
        let mut next = Vec::new();
        for file in &frontier {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let base = file.parent().unwrap_or(Path::new("/"));
            for name in import_names(&text) {
                let path = match (name.strip_prefix("~/"), home) {
                    (Some(rest), Some(h)) => h.join(rest),
                    _ => base.join(name),
                };
                if out.len() >= MAX_IMPORTS {
                    return out;
                }
                if !out.contains(&path) && !paths.contains(&path) {
                    out.push(path.clone());
                    next.push(path);
                }
            }
        }
        frontier = next.into_iter().filter(|p| p.is_file()).collect();
        if frontier.is_empty() {
            break;
        }
    }
    out
}

/// The `@path` names in a Markdown text, outside code.
fn import_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Outside inline code: the even-numbered pieces between backticks.
        for piece in line.split('`').step_by(2) {
            for word in piece.split_whitespace() {
                if let Some(name) = word.strip_prefix('@') {
                    if !name.is_empty() {
                        names.push(name);
                    }
                }
            }
        }
    }
    names
}

/// Files and directories the flags of `args` name: every flag value that is
/// an existing path (relative ones from `cwd`). Values that are inline JSON
/// or words are in argv itself, which is hashed with it.
pub fn named_paths(args: &[std::ffi::OsString], cwd: &Path) -> Vec<PathBuf> {
    let Ok(parsed) = crate::argv::parse(args) else {
        return Vec::new();
    };
    parsed
        .flags
        .iter()
        .flat_map(|f| f.values.iter())
        .filter(|v| !v.is_empty() && !v.starts_with('{') && !v.starts_with('['))
        .map(|v| cwd.join(v))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect()
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

/// What a start-up reads from files, for one cwd, home, config dir and argv.
pub struct StartUp {
    paths: Vec<PathBuf>,
    user_config: String,
}

/// Entries looked at in all, at most (beyond it: not fingerprinted).
const MAX_ENTRIES: usize = 50_000;
/// File bytes read for [`StartUp::contents`], at most.
const MAX_BYTES: u64 = 64 << 20;

impl StartUp {
    pub fn of(
        cwd: &Path,
        home: Option<&Path>,
        config_dir: &Path,
        args: &[std::ffi::OsString],
    ) -> StartUp {
        let mut paths = paths(cwd, home, config_dir);
        paths.extend(named_paths(args, cwd));
        let imported = imports(&paths, home);
        paths.extend(imported);
        StartUp {
            paths,
            user_config: user_config(home, cwd),
        }
    }

    /// By stat, whole trees (see the module docs).
    pub fn state(&self) -> Option<String> {
        self.walk(Read::Stat)
    }

    /// By content, whole trees (see the module docs).
    pub fn contents(&self) -> Option<String> {
        self.walk(Read::Contents)
    }

    fn walk(&self, how: Read) -> Option<String> {
        self.walk_within(how, MAX_ENTRIES, MAX_BYTES)
    }

    fn walk_within(&self, how: Read, max_entries: usize, max_bytes: u64) -> Option<String> {
        let mut w = Walk {
            h: Sha256::new(),
            how,
            entries: 0,
            bytes: 0,
            max_entries,
            max_bytes,
            dirs: std::collections::HashSet::new(),
        };
        for p in &self.paths {
            w.path(p, true)?;
        }
        w.h.update(self.user_config.as_bytes());
        Some(hex::encode(&w.h.finalize()[..16]))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    Stat,
    Contents,
}

struct Walk {
    h: Sha256,
    how: Read,
    entries: usize,
    bytes: u64,
    max_entries: usize,
    max_bytes: u64,
    /// Directories entered (device, inode): a link loop is walked once.
    dirs: std::collections::HashSet<(u64, u64)>,
}

impl Walk {
    /// Hash `p` (and, for a directory, everything under it). `None`: past a
    /// bound, or something there cannot be read.
    fn path(&mut self, p: &Path, top: bool) -> Option<()> {
        self.entries += 1;
        if self.entries > self.max_entries {
            return None;
        }
        self.h.update(p.as_os_str().as_encoded_bytes());
        self.h.update([0]);
        let m = match std::fs::metadata(p) {
            Ok(m) => m,
            // Absent (most of the listed names are): a state of its own.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.h.update(b"-");
                return Some(());
            }
            // A dangling link inside a tree is a state too; anything else
            // (no permission) cannot be fingerprinted.
            Err(_) if !top && std::fs::symlink_metadata(p).is_ok() => {
                self.h.update(b"~");
                return Some(());
            }
            Err(_) => return None,
        };
        if m.is_dir() {
            self.h.update(b"d");
            if !self.dirs.insert((m.dev(), m.ino())) {
                return Some(());
            }
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .ok()?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .ok()?;
            entries.sort();
            for e in entries {
                self.path(&e, false)?;
            }
            return Some(());
        }
        self.h.update(if m.is_file() { b"f" } else { b"o" });
        match self.how {
            Read::Stat => {
                for n in [
                    m.size(),
                    m.ino(),
                    m.mtime() as u64,
                    m.mtime_nsec() as u64,
                    m.ctime() as u64,
                    m.ctime_nsec() as u64,
                ] {
                    self.h.update(n.to_le_bytes());
                }
            }
            Read::Contents if m.is_file() => {
                self.bytes += m.len();
                if self.bytes > self.max_bytes {
                    return None;
                }
                let mut f = std::fs::File::open(p).ok()?;
                let mut digest = Sha256::new();
                std::io::copy(&mut f, &mut digest).ok()?;
                self.h.update(digest.finalize());
            }
            // A socket or FIFO has no contents to read (and could block).
            Read::Contents => {}
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_followed_transitively_outside_code() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::write(
            root.join("CLAUDE.md"),
            "See @docs/a.md and `@not/this.md`\n```\n@nor/this.md\n```\n@~/personal.md\n",
        )
        .unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.md"), "then @b.md\n").unwrap();
        std::fs::write(root.join("docs/b.md"), "the end\n").unwrap();
        let home = root.join("home");
        let got = imports(&[root.join("CLAUDE.md")], Some(&home));
        assert_eq!(
            got,
            [
                root.join("docs/a.md"),
                home.join("personal.md"),
                root.join("docs/b.md")
            ]
        );
        // So an edit to the imported file changes the start-up's state.
        let s = StartUp::of(root, Some(&home), &root.join(".claude"), &[]);
        let before = s.state().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(root.join("docs/b.md"), "a new end\n").unwrap();
        assert_ne!(s.state().unwrap(), before);
    }

    #[test]
    fn a_commit_and_a_shell_start_up_file_change_the_state() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let home = root.join("home");
        std::fs::create_dir_all(root.join(".git/logs")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join(".git/logs/HEAD"), "one\n").unwrap();
        let s = StartUp::of(root, Some(&home), &root.join(".claude"), &[]);
        let before = s.state().unwrap();
        std::fs::write(root.join(".git/logs/HEAD"), "one\ntwo\n").unwrap();
        let committed = s.state().unwrap();
        assert_ne!(committed, before);
        std::fs::write(home.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
        assert_ne!(s.state().unwrap(), committed);
    }

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

    fn touch(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn start(t: &Path, args: &[&str]) -> StartUp {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        StartUp::of(&t.join("a/b"), Some(t), &t.join("config"), &args)
    }

    #[test]
    fn any_start_up_file_changing_changes_both_fingerprints() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path();
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        let s = start(t, &[]);
        let (state, contents) = (s.state().unwrap(), s.contents().unwrap());
        assert_eq!(state, s.state().unwrap(), "stable");
        assert_eq!(contents, s.contents().unwrap(), "stable");
        let changed = |what: &str, s: &StartUp, before: &mut (String, String)| {
            let now = (s.state().unwrap(), s.contents().unwrap());
            assert_ne!(now.0, before.0, "{what}: state");
            assert_ne!(now.1, before.1, "{what}: contents");
            *before = now;
        };
        let mut before = (state, contents);
        // An instruction file two levels up appears.
        touch(&t.join("a/CLAUDE.md"), "be brief");
        changed("CLAUDE.md", &s, &mut before);
        // An agent deep inside the config dir's agents tree (no depth limit).
        touch(&t.join("config/agents/x/y/z/w/v/a.md"), "agent");
        changed("deep agent", &s, &mut before);
        // Plugin contents in the cache, far past the old 512 entries a tree.
        for i in 0..600 {
            touch(&t.join(format!("config/plugins/cache/p/{i:04}.md")), "x");
        }
        before = (s.state().unwrap(), s.contents().unwrap());
        touch(&t.join("config/plugins/cache/p/0599.md"), "y");
        changed("the 600th plugin file", &s, &mut before);
        // Credentials (who the account is).
        touch(&t.join("config/.credentials.json"), "{}");
        changed("credentials", &s, &mut before);
    }

    #[test]
    fn files_flags_name_are_fingerprinted_by_content() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path();
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        touch(
            &t.join("a/b/settings.json"),
            r#"{"permissions":{"defaultMode":"plan"}}"#,
        );
        touch(&t.join("plugins/one/plugin.json"), "{}");
        let s = start(
            t,
            &[
                "-p",
                "--settings",
                "settings.json",
                "--plugin-dir",
                "../../plugins/one",
                "--model",
                "opus",
            ],
        );
        let before = s.contents().unwrap();
        let state = s.state().unwrap();
        // The same size and mtime as before, other bytes: contents see it
        // (and the ctime, which no one can set back, the state).
        let file = t.join("a/b/settings.json");
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, r#"{"permissions":{"defaultMode":"acc"}}"#).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_ne!(s.contents().unwrap(), before, "--settings FILE contents");
        assert_ne!(s.state().unwrap(), state, "--settings FILE ctime");
        let before = s.contents().unwrap();
        touch(&t.join("plugins/one/commands/x.md"), "new command");
        assert_ne!(s.contents().unwrap(), before, "--plugin-dir tree");
        // Inline JSON and words are in argv, not paths.
        let args: Vec<std::ffi::OsString> = ["--settings", "{\"a\":1}", "--model", "settings.json"]
            .iter()
            .map(Into::into)
            .collect();
        assert_eq!(
            named_paths(&args, &t.join("a/b")),
            [t.join("a/b/settings.json")]
        );
    }

    #[test]
    fn past_the_bounds_nothing_is_assumed() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path();
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        for i in 0..20 {
            touch(&t.join(format!("config/skills/s{i}.md")), "0123456789");
        }
        let s = start(t, &[]);
        assert!(s.walk_within(Read::Contents, 100_000, 1 << 20).is_some());
        assert!(
            s.walk_within(Read::Contents, 100_000, 150).is_none(),
            "bytes"
        );
        assert!(s.walk_within(Read::Stat, 10, 1 << 20).is_none(), "entries");
        // A link loop is walked once, not forever.
        std::os::unix::fs::symlink(t.join("config/skills"), t.join("config/skills/loop")).unwrap();
        assert!(s.contents().is_some());
    }
}
