//! `doctor`: look at the set-up (what `claude` resolves to, the real binary,
//! the database, permissions, the guard, recent errors), print one line per
//! check with a fix for each problem, or everything as JSON for a bug report.
//! Facts are gathered first (effects), then judged by a pure function.

use super::command::{Failed, Run};
use super::install;
use crate::store::caps::BinaryKey;
use crate::store::{Store, DB_FILE};
use anyhow::Result;
use clap::Args;
use facts::MetricsEndpoint;
use serde::Serialize;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub mod activation;
mod checks;
mod facts;
pub mod room;
pub use checks::{Check, Level};
pub use facts::Facts;

/// Every check of `facts`, in the order they are shown.
pub fn judge(facts: &Facts) -> Vec<Check> {
    room::with(checks::judge(facts), facts)
}

/// Check the set-up; exits non-zero with a fix-it hint when it is broken.
#[derive(Args)]
pub struct Doctor {
    /// Everything as JSON (for bug reports).
    #[arg(long)]
    pub json: bool,
    /// Shim directory, if installed with --dir [default: $CLAUDE_SHIM_HOME/bin]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub use crate::probe::Capabilities as Caps;

const ERROR_LINES: usize = 5;

fn mode_owned(path: &Path) -> (Option<u32>, bool) {
    match std::fs::metadata(path) {
        Ok(m) => (
            Some(m.mode() & 0o7777),
            m.uid() == nix::unistd::geteuid().as_raw(),
        ),
        Err(_) => (None, false),
    }
}

/// The last `n` lines of errors.log, each `<epoch secs> <message>` shown
/// as `<age> ago: <message>`.
fn tail(path: &Path, n: usize, now: i64) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| aged(l, now))
        .collect()
}

fn aged(line: &str, now: i64) -> String {
    match line.split_once(' ') {
        Some((secs, msg)) => match secs.parse::<i64>() {
            Ok(at) => format!("{} ago: {msg}", crate::text::duration::short(now - at)),
            Err(_) => line.to_owned(),
        },
        None => line.to_owned(),
    }
}

/// The guard value our probes pass on, as the shim would.
fn guard_for_children() -> String {
    let pid = std::process::id();
    let ppid = nix::unistd::getppid().as_raw() as u32;
    match crate::guard::check(crate::env::guard(), pid, ppid) {
        crate::guard::Verdict::Ok { next } => next,
        crate::guard::Verdict::Loop(_) => format!("1:{pid}"),
    }
}

/// Look at everything. Only reads (the probe runs the real claude with
/// `--version` and `--help`), but for a turn's writes, tried and undone
/// (`room`); never creates the database.
pub fn gather(dir: Option<&Path>) -> Facts {
    let mut f = Facts {
        shim_version: env!("CARGO_PKG_VERSION").into(),
        ..Facts::default()
    };
    let me = install::this_exe().unwrap_or_default();
    f.exe = me.clone();
    f.shim_dir = install::shim_dir(dir).unwrap_or_default();
    let link = f.shim_dir.join("claude");
    (f.link, f.link_target) = match install::classify(&link, &me) {
        install::Existing::Missing => ("missing".into(), None),
        install::Existing::Current => ("current".into(), Some(me.clone())),
        install::Existing::Stale(to) => ("stale".into(), Some(to)),
        install::Existing::Gone(to) => ("gone".into(), Some(to)),
        install::Existing::Foreign(_) => ("foreign".into(), None),
    };
    let origin = super::origin::detect(&me);
    f.installed_by = origin.name().into();
    f.remove_command = origin.remove_command(&me);
    f.path_claude = which::which("claude").ok();
    f.path_claude_is_shim = f
        .path_claude
        .as_deref()
        .and_then(|p| p.canonicalize().ok())
        .is_some_and(|p| p == me);

    f.mode = crate::env::mode();
    f.claude_shim_on_path = which::which("claude-shim").ok();
    f.shim_dir_on_path = std::env::split_paths(&crate::env::path()).any(|d| d == f.shim_dir);
    let shell = super::rc::RcShell::from_env();
    f.shell = shell.name().into();
    if let Some((file, line)) = shell.find_init() {
        f.rc_file = Some(file);
        f.rc_line = Some(line);
    }
    f.rc_suggested_file = shell.rc().into();
    let custom = dir.map(|_| f.shim_dir.as_path());
    f.rc_suggested_line = shell.line(&install::invocation_name(&me), custom);

    match crate::locate::real_claude(&link) {
        Ok(real) => {
            f.real_is_shim = real.canonicalize().is_ok_and(|p| p == me);
            f.real = Some(real);
        }
        Err(e) => f.real_error = Some(e.to_string()),
    }
    f.claude_config_dir = crate::env::claude_config_dir();
    f.data_dir = crate::data_dir::configured();
    if let Some(dir) = f.data_dir.clone() {
        (f.data_dir_mode, f.data_dir_owned) = mode_owned(&dir);
        if let Err(why) = crate::data_dir::DataDir::existing_at(&dir) {
            f.data_dir_refused = Some((why.to_string(), why.fix()));
        }
    }
    if let Some(dir) = f.data_dir.clone().filter(|_| f.data_dir_refused.is_none()) {
        let db = dir.join(DB_FILE);
        f.db_exists = db.exists();
        (f.db_mode, f.db_owned) = mode_owned(&db);
        f.recent_errors = tail(&dir.join("errors.log"), ERROR_LINES, crate::store::now());
        if let Ok(Some(d)) = crate::data_dir::DataDir::existing_at(&dir) {
            f.warm_off = crate::warm::unresponsive::list(&d, crate::store::now())
                .into_iter()
                .map(|s| format!("{} in {}: {}", s.binary, s.cwd, s.why))
                .collect();
        }
        f.db_path = Some(db);
        f.metrics = metrics_endpoint();
    }
    let store = look_at_store(&mut f);
    f.capabilities_source = "unavailable".into();
    if let Some(real) = f.real.clone().filter(|_| !f.real_is_shim) {
        let cached = BinaryKey::of(&real)
            .ok()
            .zip(store.as_ref())
            .and_then(|(key, s)| s.capabilities(&key).ok().flatten());
        if let Some(c) = cached {
            f.capabilities = Some(c);
            f.capabilities_source = "cached".into();
        } else if let Some(c) = crate::probe::probe(&real, &guard_for_children()) {
            f.capabilities = Some(c);
            f.capabilities_source = "probed".into();
        }
    }
    room::gather(&mut f);
    f.guard = crate::env::guard_text();
    f
}

/// The store as a turn would reach it: its health (read, never created or
/// migrated), and the store to read capabilities from, when it opens.
fn look_at_store(f: &mut Facts) -> Option<Store> {
    let location = f
        .db_path
        .as_ref()
        .and_then(|_| crate::data_dir::DataDir::existing_at(f.data_dir.as_deref()?).ok()?)
        .map(|d| crate::store::backend::Location::configured(&d));
    match (location, &f.db_path) {
        (Some(Ok(crate::store::backend::Location::Postgres(url))), _) => {
            f.db_shared = Some(crate::store::backend::redact(&url));
            f.db_exists = true;
            let patience =
                crate::store::postgres::Patience::Each(std::time::Duration::from_secs(2));
            match Store::open_shared_as_is(&url, patience) {
                Ok(store) => match store.health() {
                    Ok(health) => {
                        f.db_health = Some(health);
                        Some(store)
                    }
                    // Reached, but no schema yet: a turn creates it.
                    Err(e) if format!("{e:#}").contains("42P01") => {
                        f.db_exists = false;
                        None
                    }
                    Err(e) => {
                        f.db_error = Some(format!("{e:#}"));
                        None
                    }
                },
                Err(e) => {
                    f.db_error = Some(format!("{e:#}"));
                    None
                }
            }
        }
        (Some(Err(e)), _) => {
            f.db_shared = Some("the configured store".into());
            f.db_exists = true;
            f.db_error = Some(format!("{e:#}"));
            None
        }
        (_, Some(db)) if f.db_exists => {
            f.db_size = crate::store::sqlite::size_on_disk(db);
            match Store::open_read_only(db).and_then(|s| Ok((s.health()?, s))) {
                Ok((health, store)) => {
                    f.db_health = Some(health);
                    Some(store)
                }
                Err(e) => {
                    f.db_error = Some(format!("{e:#}"));
                    None
                }
            }
        }
        _ => None,
    }
}

#[derive(Serialize)]
struct Report<'a> {
    ok: bool,
    checks: &'a [Check],
    facts: &'a Facts,
}

impl Run for Doctor {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let facts = gather(self.dir.as_deref());
        let checks = judge(&facts);
        let failed = checks.iter().filter(|c| c.level == Level::Fail).count();
        let shown = if self.json {
            let report = Report {
                ok: failed == 0,
                checks: &checks,
                facts: &facts,
            };
            serde_json::to_writer_pretty(&mut *out, &report)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        } else {
            let width = super::style::terminal_width();
            checks::print(out, &checks, super::style::Style::for_stdout(), width).and_then(|()| {
                match failed {
                    0 => writeln!(out, "claude-shim {}: no problems found", facts.shim_version),
                    _ => Ok(()),
                }
            })
        };
        // The verdict outlives the output: `doctor | head -1` or a closed
        // pipe must not turn a broken set-up into status 0.
        if failed > 0 {
            let hint = match (self.json, shown.is_ok()) {
                (true, _) => "",
                (false, true) => "; see the fixes above",
                (false, false) => "; `claude-shim doctor` lists them with their fixes",
            };
            return Err(Failed(format!("{failed} problem(s) found{hint}")).into());
        }
        shown.map_err(Into::into)
    }
}

/// Whether the endpoint `metrics = "ADDR"` names answers with the shim's
/// metrics (`None`: not set).
fn metrics_endpoint() -> Option<MetricsEndpoint> {
    use crate::cli::metrics::setting::{self, Problem};
    use std::io::{Read, Write};
    let addr = match setting::configured() {
        Ok(None) => return None,
        Ok(Some(a)) => a,
        Err(Problem::File(e)) => {
            return Some(MetricsEndpoint::Broken {
                why: format!("{e:#}"),
            })
        }
        Err(Problem::Value(e)) => {
            return Some(MetricsEndpoint::Unreadable {
                why: format!("{e:#}"),
            })
        }
    };
    let wait = std::time::Duration::from_secs(2);
    let (silent, other) = (
        |why: String| {
            Some(MetricsEndpoint::Silent {
                addr: addr.to_string(),
                why,
            })
        },
        |what: String| {
            Some(MetricsEndpoint::Other {
                addr: addr.to_string(),
                what,
            })
        },
    );
    let mut stream = match std::net::TcpStream::connect_timeout(&addr, wait) {
        Ok(s) => s,
        Err(e) => return silent(e.to_string()),
    };
    let _ = stream.set_read_timeout(Some(wait));
    let _ = stream.set_write_timeout(Some(wait));
    let asked = stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: claude-shim\r\n\r\n");
    let mut answer = Vec::new();
    if asked
        .and_then(|()| stream.take(1 << 20).read_to_end(&mut answer))
        .is_err()
        && answer.is_empty()
    {
        return silent("something accepts connections there but sent no answer within 2 s".into());
    }
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or("").trim().to_owned();
    if !status.contains(" 200") || !text.contains("claude_shim_build_info") {
        return other(status);
    }
    let ours = format!(
        "data_dir=\"{}\"",
        crate::cli::metrics::exposition::data_dir_id()
    );
    let addr = addr.to_string();
    Some(match text.contains(&ours) {
        true => MetricsEndpoint::Answers { addr },
        false => MetricsEndpoint::Elsewhere { addr },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_get_their_age() {
        assert_eq!(aged("1000 probing failed", 4600), "1h ago: probing failed");
        assert_eq!(aged("no stamp here", 4600), "no stamp here");
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("errors.log");
        let lines: String = (0..9).map(|i| format!("{i} e{i}\n")).collect();
        std::fs::write(&log, lines).unwrap();
        let got = tail(&log, ERROR_LINES, 60);
        assert_eq!(got.len(), ERROR_LINES);
        assert_eq!(got.last().map(String::as_str), Some("52s ago: e8"));
        assert!(tail(&t.path().join("none"), 5, 0).is_empty());
    }
}
