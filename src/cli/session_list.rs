//! Every Claude Code session of a directory (or of every project), merged
//! from Claude Code's own session files — whoever made them: the shim, a
//! person, an IDE — and what the shim knows: its pins, ephemeral sessions,
//! the turn holding a lease, the live CLI of a warm conversation.
//!
//! Gathering reads the file system and the store; [`merge`] and [`sort`] are
//! pure.

use crate::sessions::scan::Scan;
use crate::store::listing::ShimSession;
use crate::warm::protocol::{Live, LiveState};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Which sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Which {
    /// Those whose working directory is this one (canonical).
    Dir(String),
    All,
}

/// One session file as found on disk.
#[derive(Debug, Clone)]
pub struct File {
    pub id: String,
    pub path: PathBuf,
    pub size: u64,
    /// Seconds since the epoch.
    pub modified: i64,
    pub scan: Scan,
}

/// A CLI process working a session now: `<config>/sessions/<pid>.json`,
/// which Claude Code writes while it runs (and removes at exit).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Process {
    pub pid: i32,
    #[serde(rename = "sessionId")]
    pub session: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    pub id: String,
    /// Its transcript (`None`: the shim knows the session but its file is
    /// gone).
    pub path: Option<PathBuf>,
    pub cwd: Option<String>,
    /// The first user message (at most 200 characters).
    pub title: Option<String>,
    pub git_branch: Option<String>,
    /// The CLI version that last wrote it.
    pub version: Option<String>,
    /// Last modified, seconds since the epoch.
    pub modified: Option<i64>,
    pub messages: u64,
    /// Input tokens in all: uncached, written to and read from the cache.
    pub input_tokens: u64,
    pub cache_write_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
    /// Times the CLI compacted it (replaced its history by a summary).
    pub compactions: u32,
    pub file_size: Option<u64>,
    /// A process working it now (a turn: through the shim or not).
    pub running: Option<Running>,
    /// The live CLI the keeper holds for its next turn.
    pub warm: Option<Warm>,
    /// What the shim knows of it (`None`: never through the shim).
    pub shim: Option<ShimSession>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Running {
    pub pid: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warm {
    pub pid: i32,
    pub state: LiveState,
    pub turns: u32,
}

/// The project directories that may hold `which`'s sessions.
pub fn project_dirs(config_dir: &Path, which: &Which) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(config_dir.join("projects")) else {
        return Vec::new();
    };
    let dirs = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path());
    match which {
        Which::All => dirs.collect(),
        Which::Dir(d) => {
            let slug = slug(d);
            // Claude Code cuts long slugs and adds a hash: match the cut.
            let cut: String = slug.chars().take(SLUG_MAX).collect();
            dirs.filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n == slug || (slug.len() > SLUG_MAX && n.starts_with(&cut))
                })
            })
            .collect()
        }
    }
}

const SLUG_MAX: usize = 200;

/// Claude Code's project directory name for a working directory: every
/// character but ASCII letters and digits becomes `-`.
pub fn slug(dir: &str) -> String {
    dir.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The session files in `dir` (not its subdirectories: subagents).
pub fn files_in(dir: &Path) -> Vec<(String, PathBuf, std::fs::Metadata)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_owned();
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            crate::sessions::valid_id(&id).then_some((id, path, meta))
        })
        .collect()
}

/// Running CLI processes by session (stale files of dead processes skipped).
pub fn processes(config_dir: &Path, alive: impl Fn(i32) -> bool) -> HashMap<String, Process> {
    let Ok(entries) = std::fs::read_dir(config_dir.join("sessions")) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<Process>(&b).ok())
        .filter(|p| p.pid > 0 && alive(p.pid))
        .map(|p| (p.session.clone(), p))
        .collect()
}

/// `which`'s sessions under `config_dir`, each file scanned (through the
/// store's cache when there is a store: a file unchanged since is not read,
/// one that grew is read where it grew), merged with what the store and the
/// keeper know.
pub fn gather(
    config_dir: &Path,
    which: &Which,
    store: Option<&crate::store::Store>,
    live: &[Live],
) -> Vec<Session> {
    let alive = crate::platform::alive;
    let mut files = Vec::new();
    for dir in project_dirs(config_dir, which) {
        for (id, path, meta) in files_in(&dir) {
            let scan = match store {
                Some(s) => s.scan(&path).map_err(|e| e.to_string()),
                None => Scan::of(&path).map_err(|e| e.to_string()),
            };
            let scan = match scan {
                Ok(scan) => scan,
                Err(e) => {
                    crate::debug!("sessions: cannot read {}: {e}", path.display());
                    continue;
                }
            };
            // Two directories can share a slug (`/a-b`, `/a/b`).
            if let (Which::Dir(d), Some(cwd)) = (which, &scan.cwd) {
                if cwd != d {
                    continue;
                }
            }
            use std::os::unix::fs::MetadataExt;
            files.push(File {
                id,
                path,
                size: meta.len(),
                modified: meta.mtime(),
                scan,
            });
        }
    }
    let config = config_dir
        .canonicalize()
        .unwrap_or_else(|_| config_dir.into());
    let same_config = |c: &str| {
        Path::new(c).canonicalize().is_ok_and(|c| c == config) || Path::new(c) == config_dir
    };
    let shim = store
        .and_then(|s| {
            s.shim_sessions()
                .map_err(|e| crate::error!("listing the shim's sessions: {e:#}"))
                .ok()
        })
        .unwrap_or_default()
        .into_iter()
        // Sessions of another config dir live in other files.
        .filter(|s| s.config_dir.as_deref().is_none_or(same_config))
        .collect();
    merge(
        which,
        files,
        shim,
        &processes(config_dir, alive),
        live,
        alive,
    )
}

/// One row per session: the files found, and the shim's sessions that have
/// none here (theirs is gone) when they belong to `which`.
pub fn merge(
    which: &Which,
    files: Vec<File>,
    shim: Vec<ShimSession>,
    processes: &HashMap<String, Process>,
    live: &[Live],
    alive: impl Fn(i32) -> bool,
) -> Vec<Session> {
    let mut shim: HashMap<String, ShimSession> =
        shim.into_iter().map(|s| (s.session.clone(), s)).collect();
    let warm_of = |id: &str| {
        live.iter().find(|l| l.session == id).map(|l| Warm {
            pid: l.pid,
            state: l.state,
            turns: l.turns,
        })
    };
    // Working it now: a CLI process that is not an idle live one, or a turn
    // holding the shim's lease.
    let running_of = |id: &str, warm: &Option<Warm>, s: Option<&ShimSession>| {
        let idle_live = |pid: i32| {
            warm.as_ref()
                .is_some_and(|w| w.pid == pid && w.state != LiveState::Busy)
        };
        processes
            .get(id)
            .map(|p| p.pid)
            .filter(|pid| !idle_live(*pid))
            .or_else(|| s.and_then(|s| s.lease_pid).filter(|pid| alive(*pid)))
            .map(|pid| Running { pid })
    };
    let mut rows: Vec<Session> = files
        .into_iter()
        .map(|f| {
            let s = shim.remove(&f.id);
            let warm = warm_of(&f.id);
            let running = running_of(&f.id, &warm, s.as_ref());
            let u = &f.scan.usage;
            Session {
                cwd: f
                    .scan
                    .cwd
                    .clone()
                    .or_else(|| s.as_ref().and_then(|s| s.cwd.clone())),
                title: f.scan.title.clone(),
                git_branch: f.scan.git_branch.clone(),
                version: f.scan.version.clone(),
                modified: Some(f.modified),
                messages: f.scan.messages,
                input_tokens: u.input_tokens
                    + u.cache_creation_input_tokens
                    + u.cache_read_input_tokens,
                cache_write_tokens: u.cache_creation_input_tokens,
                cache_read_tokens: u.cache_read_input_tokens,
                output_tokens: u.output_tokens,
                compactions: f.scan.compactions,
                file_size: Some(f.size),
                path: Some(f.path),
                id: f.id,
                running,
                warm,
                shim: s,
            }
        })
        .collect();
    // The shim's sessions whose file is not here: shown, as gone.
    let gone: Vec<ShimSession> = shim
        .into_values()
        .filter(|s| match which {
            Which::All => true,
            Which::Dir(d) => s.cwd.as_deref() == Some(d.as_str()),
        })
        .filter(|s| s.pins > 0)
        .collect();
    rows.extend(gone.into_iter().map(|s| {
        let warm = warm_of(&s.session);
        Session {
            id: s.session.clone(),
            path: None,
            cwd: s.cwd.clone(),
            title: None,
            git_branch: None,
            version: None,
            modified: s.pinned_at,
            messages: 0,
            input_tokens: 0,
            cache_write_tokens: 0,
            cache_read_tokens: 0,
            output_tokens: 0,
            compactions: 0,
            file_size: None,
            running: running_of(&s.session, &warm, Some(&s)),
            warm,
            shim: Some(s),
        }
    }));
    sort(&mut rows);
    rows
}

/// Running first, then the newest.
pub fn sort(rows: &mut [Session]) {
    rows.sort_by(|a, b| {
        b.running
            .is_some()
            .cmp(&a.running.is_some())
            .then(b.modified.cmp(&a.modified))
            .then(a.id.cmp(&b.id))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const B: &str = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const C: &str = "8e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const D: &str = "9e8e0435-8e12-4245-aa25-f674ed4e97a7";

    fn file(id: &str, modified: i64) -> File {
        File {
            id: id.into(),
            path: PathBuf::from(format!("/c/projects/-w/{id}.jsonl")),
            size: 10,
            modified,
            scan: {
                let mut s = Scan::default();
                s.title = Some(format!("title of {id}"));
                s.cwd = Some("/w".into());
                s
            },
        }
    }

    fn shim(id: &str, cwd: &str, pins: i64, lease: Option<i32>) -> ShimSession {
        ShimSession {
            session: id.into(),
            cwd: Some(cwd.into()),
            turns: pins,
            pins,
            conversation: Some("k".into()),
            pinned_at: Some(50),
            ephemeral: false,
            config_dir: None,
            lease_pid: lease,
        }
    }

    fn live(id: &str, pid: i32, state: LiveState) -> Live {
        Live {
            session: id.into(),
            pid,
            state,
            turns: 3,
            cwd: "/w".into(),
            idle_secs: 0,
            age_secs: 0,
            rss_bytes: None,
        }
    }

    #[test]
    fn files_and_the_shims_knowledge_merge_running_first_then_newest() {
        let files = vec![file(A, 100), file(B, 300), file(C, 200)];
        let known = vec![
            shim(A, "/w", 4, None),
            // Its file is gone: listed from the store.
            shim(D, "/w", 2, None),
            shim(
                "ae8e0435-8e12-4245-aa25-f674ed4e97a7",
                "/elsewhere",
                1,
                None,
            ),
        ];
        // C has a CLI working it; B's only process is its idle live CLI.
        let procs: HashMap<String, Process> = [(C, 11), (B, 22)]
            .into_iter()
            .map(|(s, pid)| {
                (
                    s.to_owned(),
                    Process {
                        pid,
                        session: s.into(),
                    },
                )
            })
            .collect();
        let live = [live(B, 22, LiveState::Idle)];
        let rows = merge(
            &Which::Dir("/w".into()),
            files,
            known,
            &procs,
            &live,
            |_| true,
        );
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [C, B, A, D]);
        assert_eq!(rows[0].running, Some(Running { pid: 11 }));
        assert_eq!(rows[1].running, None, "an idle live CLI is not running");
        assert_eq!(rows[1].warm.as_ref().map(|w| w.pid), Some(22));
        assert_eq!(rows[2].shim.as_ref().map(|s| s.turns), Some(4));
        assert_eq!(rows[2].title.as_deref(), Some(&*format!("title of {A}")));
        assert_eq!((rows[3].path.clone(), rows[3].modified), (None, Some(50)));
        // Every project: the other directory's gone session too.
        let all = merge(
            &Which::All,
            vec![],
            vec![shim(D, "/x", 1, Some(7))],
            &HashMap::new(),
            &[],
            |p| p == 7,
        );
        assert_eq!(
            all[0].running,
            Some(Running { pid: 7 }),
            "a turn holds its lease"
        );
    }

    #[test]
    fn a_busy_live_cli_is_running() {
        let procs: HashMap<String, Process> = [(
            A.to_owned(),
            Process {
                pid: 5,
                session: A.into(),
            },
        )]
        .into();
        let rows = merge(
            &Which::All,
            vec![file(A, 1)],
            vec![],
            &procs,
            &[live(A, 5, LiveState::Busy)],
            |_| true,
        );
        assert_eq!(rows[0].running, Some(Running { pid: 5 }));
    }

    #[test]
    fn slugs_and_project_dirs() {
        assert_eq!(slug("/home/u/my.proj_x"), "-home-u-my-proj-x");
        let t = tempfile::tempdir().unwrap();
        let long = format!("/w/{}", "a".repeat(300));
        let cut: String = slug(&long).chars().take(SLUG_MAX).collect();
        for d in ["-w-p", "-w-q", &format!("{cut}-1a2b3c")] {
            std::fs::create_dir_all(t.path().join("projects").join(d)).unwrap();
        }
        let names = |w: &Which| {
            let mut v: Vec<String> = project_dirs(t.path(), w)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&Which::Dir("/w/p".into())), ["-w-p"]);
        assert_eq!(names(&Which::Dir(long)).len(), 1);
        assert_eq!(names(&Which::All).len(), 3);
    }

    #[test]
    fn processes_of_dead_pids_are_skipped() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("sessions");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("11.json"),
            format!(r#"{{"pid":11,"sessionId":"{A}","cwd":"/w"}}"#),
        )
        .unwrap();
        std::fs::write(
            dir.join("12.json"),
            format!(r#"{{"pid":12,"sessionId":"{B}"}}"#),
        )
        .unwrap();
        std::fs::write(dir.join("12.abc.key"), "x").unwrap();
        let got = processes(t.path(), |p| p == 11);
        assert_eq!(got.keys().collect::<Vec<_>>(), [A]);
    }
}
