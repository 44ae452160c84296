//! The turn's side of [`crate::cache_miss`]: what moves its cached prefix,
//! taken before its CLI starts (a new process reads its CLAUDE.md then),
//! and why it missed its cache, looked into only where it wrote more to the
//! cache than it read (the store is asked then, and only then).

use super::plan::Plan;
use crate::cache_miss::{self, part, CacheMiss, Facts, Prefix};
use crate::store::runs::{Engine, Kind, Spent};
use crate::store::Store;
use crate::timeline::Timing;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The flags whose values shape each part of the request's prefix, where
/// the session file has no record of the request (releases before 2.1).
const MODEL: &[&str] = &["model"];
/// The system prompt and the tools (`--mcp-config` and `--allowedTools`
/// move nothing: MCP tools are announced in a message, permissions are not
/// in the request).
const SHAPE: &[&str] = &[
    "system-prompt",
    "system-prompt-file",
    "append-system-prompt",
    "append-system-prompt-file",
    "tools",
    "disallowedTools",
];
/// Files a new process reads into its start-up snapshot, in each directory
/// from the cwd up, and in the config dir.
const MEMORY_FILES: &[&str] = &["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"];

/// The turn's prefix fingerprint. `model_env`: `ANTHROPIC_MODEL`;
/// `snapshot`: where a new process takes its start-up snapshot (the real
/// binary, the config dir, the cwd), for a CLI that takes one anew in each
/// process (`None`: it keeps it with the session).
pub fn prefix(
    args: &[OsString],
    model_env: Option<&str>,
    snapshot: Option<(&Path, &Path, &str)>,
) -> Prefix {
    let parsed = crate::argv::parse(args).unwrap_or_default();
    let flags = |names: &[&str]| -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        for n in names {
            for u in parsed.uses(n) {
                v.push(n.as_bytes().to_vec());
                v.extend(u.values.iter().map(|x| x.as_bytes().to_vec()));
                if n.ends_with("-file") {
                    v.extend(u.values.iter().map(|f| file_bytes(Path::new(f))));
                }
            }
        }
        v
    };
    let mut model = flags(MODEL);
    if model.is_empty() {
        model.push(model_env.unwrap_or("").as_bytes().to_vec());
    }
    Prefix {
        model: format!("f{}", part(model.iter().map(Vec::as_slice))),
        shape: format!("f{}", part(flags(SHAPE).iter().map(Vec::as_slice))),
        snapshot: snapshot
            .map(|(cli, config_dir, cwd)| {
                part(
                    self::snapshot(cli, config_dir, cwd)
                        .iter()
                        .map(Vec::as_slice),
                )
            })
            .unwrap_or_default(),
    }
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// What a new process starts from, by name, size and time: the CLI's binary
/// and the memory files it reads.
fn snapshot(cli: &Path, config_dir: &Path, cwd: &str) -> Vec<Vec<u8>> {
    let stat = |p: &Path| -> Option<Vec<u8>> {
        let m = std::fs::metadata(p).ok()?;
        let mut v = p.as_os_str().as_encoded_bytes().to_vec();
        v.extend(m.len().to_le_bytes());
        v.extend(m.mtime().to_le_bytes());
        v.extend(m.mtime_nsec().to_le_bytes());
        Some(v)
    };
    let mut out: Vec<Vec<u8>> = stat(cli).into_iter().collect();
    let mut repo = None;
    for dir in Path::new(cwd).ancestors() {
        out.extend(MEMORY_FILES.iter().filter_map(|f| stat(&dir.join(f))));
        if repo.is_none() && dir.join(".git").exists() {
            repo = Some(dir.join(".git"));
        }
    }
    // The commit checked out (older releases put the git status in the
    // system prompt of each new process).
    if let Some(git) = repo {
        let head = file_bytes(&git.join("HEAD"));
        let target = std::str::from_utf8(&head)
            .ok()
            .and_then(|h| h.trim().strip_prefix("ref: "))
            .map(|r| file_bytes(&git.join(r)));
        out.push(head);
        out.extend(target);
    }
    out.extend(stat(&config_dir.join("CLAUDE.md")));
    out
}

/// The model and shape the CLI recorded of its last request, where its
/// session file has them: they replace what the flags name (an alias, a
/// setting, a remap all resolve to them).
pub fn as_sent(prefix: &Prefix, session_file: Option<&Path>) -> Prefix {
    match session_file.and_then(crate::sessions::last_request) {
        Some((model, shape)) => Prefix {
            model: format!("o{}", part([model.as_bytes()])),
            shape: format!("o{shape}"),
            ..prefix.clone()
        },
        None => prefix.clone(),
    }
}

/// What [`miss`] needs of the run.
pub(super) struct Run<'a> {
    pub plan: &'a Plan,
    pub kind: Kind,
    pub engine: Engine,
    pub spent: &'a Spent,
    pub prefix: &'a Prefix,
    /// The run's row written ahead (not its own previous turn).
    pub row: Option<i64>,
    pub timing: &'a Timing,
    /// Whether the CLI compacted the session during the run (asked only on
    /// a miss: it may read the session file).
    pub compacted: &'a dyn Fn() -> bool,
    /// The session files that record the requests' shapes (the run's, and
    /// the one it resumed).
    pub files: &'a [&'a Path],
}

/// The session a plan resumes (its previous turn is that session's).
pub(super) fn source(plan: &Plan) -> Option<&str> {
    match plan {
        Plan::Resume { session, .. }
        | Plan::Caller { session }
        | Plan::Continue { session, .. } => Some(session),
        Plan::Fresh { .. } | Plan::AsIs { .. } => None,
    }
}

/// Why the run missed its cache; `None` where it read its cache, or was
/// not a resumed turn.
pub(super) fn miss(store: &Store, r: &Run<'_>) -> Option<CacheMiss> {
    if !matches!(r.kind, Kind::Resumed | Kind::Forked) {
        return None;
    }
    let (usage, _) = r.spent.usage?;
    if usage.cache_creation_input_tokens <= usage.cache_read_input_tokens {
        return None;
    }
    let source = source(r.plan)?;
    let previous = store
        .previous_run(source, r.row)
        .map_err(|e| crate::error!("reading the session's previous run: {e:#}"))
        .ok()
        .flatten();
    // Which part of the shape moved, told from the CLI's records of both.
    let shape_part = previous
        .as_ref()
        .and_then(|p| p.prefix.as_ref())
        .filter(|p| cache_miss::differs(&p.shape, &r.prefix.shape))
        .and_then(|p| {
            let (a, b) = (
                p.shape.strip_prefix('o')?,
                r.prefix.shape.strip_prefix('o')?,
            );
            crate::sessions::tools_differ(r.files, a, b)
        })
        .map(|tools| match tools {
            true => CacheMiss::Tools,
            false => CacheMiss::SystemPrompt,
        });
    cache_miss::classify(&Facts {
        read: usage.cache_read_input_tokens,
        written: usage.cache_creation_input_tokens,
        one_hour: usage.one_hour_cache(),
        started_at: store.now() - r.timing.turn.round() as i64,
        previous: previous.as_ref(),
        prefix: r.prefix,
        new_process: r.engine != Engine::Warm,
        compacted: (r.compacted)(),
        shape_part,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(args: &[&str], cwd: &Path) -> Prefix {
        let v: Vec<OsString> = args.iter().map(Into::into).collect();
        let at = (Path::new("/nonexistent/claude"), cwd, cwd.to_str().unwrap());
        prefix(&v, None, Some(at))
    }

    #[test]
    fn each_part_moves_with_its_own_flags_only() {
        let dir = tempfile::tempdir().unwrap();
        let base = of(&["-p", "hi"], dir.path());
        let model = of(&["-p", "hi", "--model", "opus"], dir.path());
        assert_ne!(model.model, base.model);
        assert_eq!(model.shape, base.shape);
        let system = of(
            &["-p", "hi", "--append-system-prompt", "be brief"],
            dir.path(),
        );
        assert_ne!(system.shape, base.shape);
        assert_eq!(system.model, base.model);
        let tools = of(&["-p", "hi", "--disallowedTools", "Bash"], dir.path());
        assert_ne!(tools.shape, base.shape);
        assert_ne!(tools.shape, system.shape);
        // The prompt and flags that do not shape the prefix move nothing.
        assert_eq!(of(&["-p", "other", "--verbose"], dir.path()), base);
        // A memory file is part of a new process's snapshot.
        std::fs::write(dir.path().join("CLAUDE.md"), "be kind").unwrap();
        let with_memory = of(&["-p", "hi"], dir.path());
        assert_ne!(with_memory.snapshot, base.snapshot);
        assert_eq!(with_memory.model, base.model);
        // A system prompt file's content counts, not only its name.
        let file = dir.path().join("sys.txt");
        std::fs::write(&file, "one").unwrap();
        let f = file.to_string_lossy().into_owned();
        let one = of(&["-p", "hi", "--system-prompt-file", &f], dir.path());
        std::fs::write(&file, "two").unwrap();
        let two = of(&["-p", "hi", "--system-prompt-file", &f], dir.path());
        assert_ne!(one.shape, two.shape);
    }
}
