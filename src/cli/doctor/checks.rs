//! Judging doctor's facts: one check per concern, each with a level and, for
//! problems, the command that fixes it. Pure, so the rules are tested as a
//! table without touching the machine.

use super::facts::{Facts, MetricsEndpoint};
use crate::cli::human;
use crate::cli::style::Style;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Info,
    Warn,
    /// The set-up is broken: doctor exits non-zero.
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub level: Level,
    pub detail: String,
    pub fix: Option<String>,
}

pub(super) fn check(name: &'static str, level: Level, detail: String, fix: Option<&str>) -> Check {
    Check {
        name,
        level,
        detail,
        fix: fix.map(str::to_owned),
    }
}

const REAL_FIX: &str = "install Claude Code (`npm install -g @anthropic-ai/claude-code`), \
     or set CLAUDE_SHIM_REAL to the real claude binary";

/// A fix is a command to paste: a code span (`human::wrap` never breaks
/// one), its paths quoted for the shell.
pub(super) fn code(cmd: &str) -> String {
    format!("`{cmd}`")
}

pub(super) fn quoted(path: &Path) -> String {
    crate::text::quote::posix(&path.to_string_lossy())
}

/// Wherever doctor runs from: the full path, not the cwd's `shim.db`.
fn db_fix(db: &Path) -> String {
    let mut broken = db.as_os_str().to_owned();
    broken.push(".broken");
    format!(
        "move the database away: {} (the shim starts a new one)",
        code(&format!("mv {} {}", quoted(db), quoted(Path::new(&broken))))
    )
}

pub fn judge(f: &Facts) -> Vec<Check> {
    let mut out = vec![path_check(f), link_check(f)];
    out.extend(real_checks(f));
    out.extend(db_check(f));
    out.extend(permission_checks(f));
    out.push(guard_check(f.guard.as_deref()));
    out.extend(warm_check(&f.warm_off));
    out.extend(metrics_check(f.metrics.as_ref()));
    out.push(errors_check(&f.recent_errors));
    out
}

/// The endpoint `metrics = "ADDR"` names: a warning when it is silent or
/// cannot be read (turns never read the setting: nothing else changes).
fn metrics_check(m: Option<&MetricsEndpoint>) -> Option<Check> {
    let name = "metrics";
    const START: &str = "start it: `claude-shim metrics --serve` (docs/metrics.md has a systemd \
                         unit), or remove the `metrics` line from config.toml";
    Some(match m? {
        MetricsEndpoint::Answers { addr } => check(
            name,
            Level::Ok,
            format!("http://{addr}/metrics answers with this data dir's figures"),
            None,
        ),
        MetricsEndpoint::Elsewhere { addr } => check(
            name,
            Level::Warn,
            format!(
                "http://{addr}/metrics answers with the figures of another data dir (a service \
                 started with another HOME or CLAUDE_SHIM_HOME)"
            ),
            Some("give the service the environment the turns run with (docs/metrics.md)"),
        ),
        MetricsEndpoint::Silent { addr, why } => check(
            name,
            Level::Warn,
            format!("config.toml names http://{addr}/metrics, which does not answer: {why}"),
            Some(START),
        ),
        MetricsEndpoint::Other { addr, what } => check(
            name,
            Level::Warn,
            format!(
                "config.toml names http://{addr}/metrics, where another program answers \
                 ({what:?}), not the shim"
            ),
            Some("choose a free address for `metrics` in config.toml"),
        ),
        MetricsEndpoint::Unreadable { why } => check(
            name,
            Level::Warn,
            format!("{why} (turns do not read it: they run as before)"),
            Some("write it as `metrics = \"127.0.0.1:9464\"` in config.toml"),
        ),
        MetricsEndpoint::Broken { why } => check(
            name,
            Level::Fail,
            format!("{why}: turns cannot read their `store` from it either, so they run as without the shim"),
            Some("fix config.toml: one `metrics = \"127.0.0.1:9464\"` line, the value quoted"),
        ),
    })
}

/// Live CLIs that did not answer: their turns run cold for an hour.
fn warm_check(off: &[String]) -> Option<Check> {
    (!off.is_empty()).then(|| {
        check(
            "warm turns",
            Level::Warn,
            format!(
                "off for an hour where a new live CLI said nothing (a wrapper that buffers its \
                 input, or a release without stream-json): {}",
                off.join("; ")
            ),
            Some(
                "`claude-shim warm stop` (tries a live CLI again now), or set \
                 `CLAUDE_SHIM_WARM=0`",
            ),
        )
    })
}

/// Whether this shell reaches the shim (see `activation`): a failure when
/// it does not, as nothing the shim does then happens.
fn path_check(f: &Facts) -> Check {
    let a = super::activation::judge(f);
    let level = if a.how.is_some() {
        Level::Ok
    } else {
        Level::Fail
    };
    Check {
        name: "claude on PATH",
        level,
        detail: a.detail,
        fix: a.fix,
    }
}

fn link_check(f: &Facts) -> Check {
    let name = "shim link";
    let link = f.shim_dir.join("claude");
    match f.link.as_str() {
        "current" => check(
            name,
            Level::Ok,
            format!("{} -> {}", link.display(), f.exe.display()),
            None,
        ),
        "stale" => check(
            name,
            Level::Warn,
            format!("{} links to another claude-shim build", link.display()),
            Some("`claude-shim install`"),
        ),
        "gone" => check(
            name,
            Level::Warn,
            format!(
                "{} links to {}, which is gone (claude-shim was uninstalled or moved); \
                 PATH lookups skip it, so `claude` runs the real one",
                link.display(),
                f.link_target.as_deref().unwrap_or(Path::new("?")).display()
            ),
            Some(&format!(
                "{} (or `claude-shim install` to link this claude-shim)",
                code(&format!("rm {}", quoted(&link)))
            )),
        ),
        "foreign" => check(
            name,
            Level::Warn,
            format!("{} is not claude-shim's", link.display()),
            Some("move it away, then run `claude-shim install`"),
        ),
        _ => check(
            name,
            Level::Info,
            format!(
                "not installed ({} does not exist; alias mode needs none)",
                link.display()
            ),
            None,
        ),
    }
}

fn real_checks(f: &Facts) -> Vec<Check> {
    let Some(real) = &f.real else {
        let why = f.real_error.clone().unwrap_or_default();
        return vec![check("real claude", Level::Fail, why, Some(REAL_FIX))];
    };
    if f.real_is_shim {
        return vec![check(
            "real claude",
            Level::Fail,
            format!("{} is the shim itself (it would loop)", real.display()),
            Some("set CLAUDE_SHIM_REAL to the real claude binary, not the shim"),
        )];
    }
    let version = f
        .capabilities
        .as_ref()
        .map_or("version unknown", |c| c.version.as_str());
    let mut out = vec![check(
        "real claude",
        Level::Ok,
        format!("{} ({version})", real.display()),
        None,
    )];
    if f.capabilities
        .as_ref()
        .is_some_and(|c| c.newer_than_tested())
    {
        out.push(check(
            "tested with",
            Level::Warn,
            format!(
                "Claude Code {version} is newer than the newest release this build was tested \
                 with ({}); it is expected to work",
                crate::probe::NEWEST_TESTED
            ),
            Some(&format!(
                "should a turn misbehave, {} runs it without the shim; please report it",
                code("CLAUDE_SHIM_BYPASS=1")
            )),
        ));
    }
    out.push(match &f.capabilities {
        None => check(
            "capabilities",
            Level::Warn,
            "the probe got no answer from `claude --version`".into(),
            Some(&format!(
                "run {} to see why",
                code(&format!("{} --version", quoted(real)))
            )),
        ),
        Some(c) => {
            let flag = |on: bool, name: &str| {
                if on {
                    name.to_owned()
                } else {
                    format!("no {name}")
                }
            };
            let list = [
                flag(c.resume, "resume"),
                flag(c.fork_session, "fork-session"),
                flag(c.session_id, "session-id"),
                flag(c.resume_session_at, "resume-session-at"),
            ]
            .join(", ");
            let detail = format!("{list} ({})", f.capabilities_source);
            if c.sessions() {
                check("capabilities", Level::Ok, detail, None)
            } else {
                check(
                    "capabilities",
                    Level::Warn,
                    format!("{detail}: every turn runs as asked (no savings)"),
                    Some("upgrade Claude Code"),
                )
            }
        }
    });
    out
}

fn db_check(f: &Facts) -> Option<Check> {
    let name = "database";
    let Some(db) = &f.db_path else {
        // A refused directory fails once, under permissions, with its fix.
        if f.data_dir_refused.is_some() {
            return Some(check(
                name,
                Level::Info,
                "not opened: the data directory is refused (see permissions)".into(),
                None,
            ));
        }
        return Some(check(
            name,
            Level::Fail,
            "no data directory (HOME is unset)".into(),
            Some("set CLAUDE_SHIM_HOME or HOME"),
        ));
    };
    if let Some(url) = &f.db_shared {
        return shared_store_check(f, url);
    }
    let fix = db_fix(db);
    let db = db.display();
    if !f.db_exists {
        return Some(check(
            name,
            Level::Info,
            format!("{db} not created yet (the first managed turn creates it)"),
            None,
        ));
    }
    if let Some(e) = &f.db_error {
        return Some(check(name, Level::Fail, format!("{db}: {e}"), Some(&fix)));
    }
    let h = f.db_health.as_ref()?;
    if h.quick_check != "ok" {
        return Some(check(
            name,
            Level::Fail,
            format!("{db} is damaged: {}", human::preview(&h.quick_check, 200)),
            Some(&fix),
        ));
    }
    let size = human::bytes(f.db_size as i64);
    let detail = format!("{db}: ok, {size}, schema {}", h.schema_version);
    Some(schema_check(
        name,
        detail,
        h,
        "upgrade this claude-shim; another, newer one wrote the database",
    ))
}

/// The database row once it was read: ok, to be migrated, or newer than
/// this build (`newer`: the fix then).
fn schema_check(
    name: &'static str,
    detail: String,
    h: &crate::store::report::Health,
    newer: &str,
) -> Check {
    if h.schema_version > h.schema_expected {
        check(
            name,
            Level::Warn,
            format!(
                "{detail}, newer than this build knows ({})",
                h.schema_expected
            ),
            Some(newer),
        )
    } else if h.schema_version < h.schema_expected {
        check(
            name,
            Level::Ok,
            format!("{detail} (migrates to {} on next use)", h.schema_expected),
            None,
        )
    } else {
        check(name, Level::Ok, detail, None)
    }
}

/// A shared store (`CLAUDE_SHIM_STORE`, or `store = …` in config.toml): reached, and its schema.
fn shared_store_check(f: &Facts, url: &str) -> Option<Check> {
    let name = "database";
    if !f.db_exists {
        return Some(check(
            name,
            Level::Info,
            format!(
                "shared store {url}: reached, no schema yet (the first managed turn creates it)"
            ),
            None,
        ));
    }
    if let Some(e) = &f.db_error {
        return Some(check(
            name,
            Level::Fail,
            format!("{url}: {e} (turns run as without the shim until it answers)"),
            Some("check that the server is up and the URL in CLAUDE_SHIM_STORE (or `store =` in config.toml) is right"),
        ));
    }
    let h = f.db_health.as_ref()?;
    let detail = format!("shared store {url}: ok, schema {}", h.schema_version);
    Some(schema_check(
        name,
        detail,
        h,
        "upgrade this claude-shim; a newer one migrated the store",
    ))
}

fn permission_checks(f: &Facts) -> Vec<Check> {
    let name = "permissions";
    // A refusal is said even when the directory could not be looked at.
    if let Some((why, fix)) = &f.data_dir_refused {
        return vec![check(
            name,
            Level::Fail,
            format!("{why}; the shim will not use it (turns run as without the shim)"),
            Some(fix),
        )];
    }
    let (Some(path), Some(dir_mode)) = (&f.data_dir, f.data_dir_mode) else {
        return vec![];
    };
    let dir = path.display();
    let chmod = code(&format!("chmod 700 {}", quoted(path)));
    let mut out = Vec::new();
    if !f.data_dir_owned {
        out.push(check(
            name,
            Level::Fail,
            format!("{dir} belongs to another user; the shim will not use it"),
            Some("set CLAUDE_SHIM_HOME to a directory of your own"),
        ));
    } else if dir_mode & 0o022 != 0 {
        out.push(check(
            name,
            Level::Fail,
            format!("{dir} is {dir_mode:04o}, writable by others; the shim will not use it"),
            Some(&chmod),
        ));
    } else if dir_mode & 0o077 != 0 {
        out.push(check(
            name,
            Level::Warn,
            format!("{dir} is {dir_mode:04o}: others can look inside (want 0700)"),
            Some(&chmod),
        ));
    }
    if let (Some(path), Some(mode)) = (&f.db_path, f.db_mode) {
        let db = path.display();
        if !f.db_owned {
            out.push(check(
                name,
                Level::Fail,
                format!("{db} belongs to another user; the shim will not use it"),
                Some(&db_fix(path)),
            ));
        } else if mode & 0o077 != 0 {
            out.push(check(
                name,
                Level::Fail,
                format!("{db} is {mode:04o} (want 0600); the shim will not use it"),
                Some(&code(&format!("chmod 600 {}", quoted(path)))),
            ));
        }
    }
    if out.is_empty() {
        let db = f.db_mode.map_or(String::new(), |m| {
            format!(", {DB} {m:04o}", DB = crate::store::DB_FILE)
        });
        out.push(check(
            name,
            Level::Ok,
            format!("{dir} {dir_mode:04o}{db}"),
            None,
        ));
    }
    out
}

fn guard_check(guard: Option<&str>) -> Check {
    let name = "recursion guard";
    let Some(raw) = guard else {
        return check(
            name,
            Level::Ok,
            format!("{} not set (not running under the shim)", crate::env::GUARD),
            None,
        );
    };
    let parsed = raw
        .split_once(':')
        .and_then(|(d, p)| Some((d.parse::<u32>().ok()?, p.parse::<u32>().ok()?)));
    match parsed {
        Some((depth, pid)) => check(
            name,
            Level::Info,
            format!(
                "{}={raw}: this runs inside a claude the shim started (depth {depth}, shim pid {pid})",
                crate::env::GUARD
            ),
            None,
        ),
        None => check(
            name,
            Level::Warn,
            format!(
                "{}={raw:?} is malformed; the shim treats it as unset",
                crate::env::GUARD
            ),
            Some("`unset CLAUDE_SHIM_GUARD` (only the shim should set it)"),
        ),
    }
}

fn errors_check(lines: &[String]) -> Check {
    if lines.is_empty() {
        return check("recent errors", Level::Ok, "none".into(), None);
    }
    let detail = lines
        .iter()
        .map(|l| human::preview(l, 300))
        .collect::<Vec<_>>()
        .join("\n");
    check(
        "recent errors",
        Level::Info,
        format!(
            "last {} (the turns still ran, as without the shim):\n{detail}",
            lines.len()
        ),
        None,
    )
}

/// One line per check; a problem's fix on the line below.
/// The checks, a line each, their details and fixes wrapped to `width`
/// columns (`None`: a pipe) under the detail column.
pub fn print(
    out: &mut dyn Write,
    checks: &[Check],
    style: Style,
    width: Option<usize>,
) -> std::io::Result<()> {
    // "ok    name             ": the detail column starts at 24.
    const DETAIL: usize = 4 + 2 + 16 + 1;
    let pad = " ".repeat(DETAIL);
    let fill = |text: &str, indent: usize| -> Vec<String> {
        match width {
            Some(w) => super::super::human::wrap(text, w.saturating_sub(indent).max(20)),
            None => vec![text.to_owned()],
        }
    };
    for c in checks {
        let label = match c.level {
            Level::Ok => style.green("ok  "),
            Level::Info => style.dim("info"),
            Level::Warn => style.yellow("warn"),
            Level::Fail => style.red("FAIL"),
        };
        for (i, detail) in c.detail.lines().enumerate() {
            for (j, line) in fill(detail, DETAIL + 2).iter().enumerate() {
                match (i, j) {
                    (0, 0) => writeln!(out, "{label}  {:<16} {line}", c.name)?,
                    (0, _) => writeln!(out, "{pad}{line}")?,
                    _ => writeln!(out, "{pad}  {line}")?,
                }
            }
        }
        if let Some(fix) = &c.fix {
            for (j, line) in fill(fix, DETAIL + 5).iter().enumerate() {
                match j {
                    0 => writeln!(out, "{pad}{} {line}", style.bold("fix:"))?,
                    _ => writeln!(out, "{pad}     {line}")?,
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Caps;
    use super::*;
    use crate::store::report::Health;
    use std::path::PathBuf;

    /// A healthy, installed set-up.
    fn good() -> Facts {
        Facts {
            exe: "/opt/claude-shim".into(),
            shim_dir: "/d/bin".into(),
            link: "current".into(),
            path_claude: Some("/d/bin/claude".into()),
            path_claude_is_shim: true,
            real: Some("/usr/bin/claude".into()),
            capabilities: Some(Caps {
                version: "2.1.330".into(),
                resume: true,
                fork_session: true,
                session_id: true,
                resume_session_at: true,
            }),
            capabilities_source: "cached".into(),
            data_dir: Some("/d".into()),
            data_dir_mode: Some(0o700),
            data_dir_owned: true,
            data_dir_refused: None,
            db_path: Some("/d/shim.db".into()),
            db_exists: true,
            db_mode: Some(0o600),
            db_owned: true,
            db_size: 4096,
            db_health: Some(Health {
                quick_check: "ok".into(),
                schema_version: 2,
                schema_expected: 2,
            }),
            ..Facts::default()
        }
    }

    fn worst(f: &Facts) -> (Level, Vec<&'static str>) {
        let checks = judge(f);
        let worst = checks.iter().map(|c| c.level).max().unwrap_or(Level::Ok);
        let names = checks
            .iter()
            .filter(|c| c.level == worst && worst >= Level::Warn)
            .map(|c| c.name)
            .collect();
        (worst, names)
    }

    #[test]
    fn healthy_setup_passes() {
        assert_eq!(worst(&good()), (Level::Ok, vec![]));
    }

    #[test]
    fn table_of_breakage() {
        type Edit = fn(&mut Facts);
        let rows: Vec<(&str, Edit, Level, &str)> = vec![
            (
                "a Claude Code newer than the newest tested",
                |f| {
                    if let Some(c) = f.capabilities.as_mut() {
                        c.version = "2.1.333".into();
                    }
                },
                Level::Warn,
                "tested with",
            ),
            (
                "real claude first while installed",
                |f| {
                    f.path_claude = Some("/usr/bin/claude".into());
                    f.path_claude_is_shim = false;
                },
                Level::Fail,
                "claude on PATH",
            ),
            (
                "no claude on PATH while installed",
                |f| {
                    f.path_claude = None;
                    f.path_claude_is_shim = false;
                },
                Level::Fail,
                "claude on PATH",
            ),
            (
                "nothing set up: not installed, real first, no alias",
                |f| {
                    f.link = "missing".into();
                    f.path_claude = Some("/usr/bin/claude".into());
                    f.path_claude_is_shim = false;
                },
                Level::Fail,
                "claude on PATH",
            ),
            (
                "no real claude",
                |f| {
                    f.real = None;
                    f.real_error = Some("cannot find the real claude".into());
                },
                Level::Fail,
                "real claude",
            ),
            (
                "real claude is the shim",
                |f| f.real_is_shim = true,
                Level::Fail,
                "real claude",
            ),
            (
                "old claude without resume",
                |f| {
                    if let Some(c) = f.capabilities.as_mut() {
                        c.resume = false;
                    }
                },
                Level::Warn,
                "capabilities",
            ),
            (
                "claude before 1.0.128, without --resume-session-at",
                |f| {
                    if let Some(c) = f.capabilities.as_mut() {
                        c.resume_session_at = false;
                    }
                },
                Level::Warn,
                "capabilities",
            ),
            (
                "probe failed",
                |f| f.capabilities = None,
                Level::Warn,
                "capabilities",
            ),
            (
                "damaged db",
                |f| {
                    if let Some(h) = f.db_health.as_mut() {
                        h.quick_check = "*** in database main *** Page 3 is never used".into();
                    }
                },
                Level::Fail,
                "database",
            ),
            (
                "unopenable db",
                |f| {
                    f.db_health = None;
                    f.db_error = Some("file is not a database".into());
                },
                Level::Fail,
                "database",
            ),
            (
                "newer schema",
                |f| {
                    if let Some(h) = f.db_health.as_mut() {
                        h.schema_version = h.schema_expected + 1;
                    }
                },
                Level::Warn,
                "database",
            ),
            (
                "dir writable by others",
                |f| f.data_dir_mode = Some(0o777),
                Level::Fail,
                "permissions",
            ),
            (
                "dir readable by others",
                |f| f.data_dir_mode = Some(0o755),
                Level::Warn,
                "permissions",
            ),
            (
                "db readable by others",
                |f| f.db_mode = Some(0o644),
                Level::Fail,
                "permissions",
            ),
            (
                "a directory above the data dir open to others",
                |f| {
                    f.data_dir_refused = Some((
                        "/srv (above the data directory) is 0777, writable by everyone".into(),
                        "set CLAUDE_SHIM_HOME to a directory of your own".into(),
                    ))
                },
                Level::Fail,
                "permissions",
            ),
            (
                "dir of another user",
                |f| f.data_dir_owned = false,
                Level::Fail,
                "permissions",
            ),
            (
                "malformed guard",
                |f| f.guard = Some("x".into()),
                Level::Warn,
                "recursion guard",
            ),
            (
                "stale link",
                |f| f.link = "stale".into(),
                Level::Warn,
                "shim link",
            ),
            (
                "link to a removed binary, shell not in PATH mode",
                |f| {
                    f.link = "gone".into();
                    f.path_claude = Some("/usr/bin/claude".into());
                    f.path_claude_is_shim = false;
                    f.mode = Some("alias".into());
                    f.claude_shim_on_path = Some("/c/claude-shim".into());
                },
                Level::Warn,
                "shim link",
            ),
        ];
        for (what, edit, level, name) in rows {
            let mut f = good();
            edit(&mut f);
            assert_eq!(worst(&f), (level, vec![name]), "{what}");
            let fails_have_fixes = judge(&f)
                .iter()
                .filter(|c| c.level >= Level::Warn)
                .all(|c| c.fix.is_some());
            assert!(fails_have_fixes, "{what}: every problem names a fix");
        }
    }

    #[test]
    fn a_link_left_by_a_package_manager_names_the_command_that_removes_it() {
        let mut f = good();
        f.link = "gone".into();
        f.shim_dir = "/h/.local/share/claude-shim/my bin".into();
        f.link_target = Some("/p/lib/node_modules/claude-shim/bin/claude-shim".into());
        let link = judge(&f).into_iter().find(|c| c.name == "shim link");
        let link = link.expect("a shim link check");
        assert!(link.detail.contains("which is gone"), "{link:?}");
        assert!(link.detail.contains("/p/lib/node_modules"), "{link:?}");
        let fix = link.fix.unwrap_or_default();
        assert!(
            fix.starts_with("`rm '/h/.local/share/claude-shim/my bin/claude'`"),
            "{fix}"
        );
    }

    #[test]
    fn fixes_are_code_spans_that_paste_whatever_the_path() {
        let mut f = good();
        f.data_dir = Some("/h/it's a `dir` $x".into());
        f.data_dir_mode = Some(0o755);
        f.db_path = Some("/h/it's a `dir` $x/shim.db".into());
        f.db_mode = Some(0o644);
        f.db_health = None;
        f.db_error = Some("file is not a database".into());
        f.real = Some("/opt/my tools/claude".into());
        f.capabilities = None;
        f.guard = Some("x".into());
        let chmod_dir = r"`chmod 700 '/h/it'\''s a `dir` $x'`";
        let chmod_db = r"`chmod 600 '/h/it'\''s a `dir` $x/shim.db'`";
        let mv = r"`mv '/h/it'\''s a `dir` $x/shim.db' '/h/it'\''s a `dir` $x/shim.db.broken'`";
        let got: Vec<(&str, String)> = judge(&f)
            .into_iter()
            .filter_map(|c| Some((c.name, c.fix?)))
            .collect();
        let want = [
            (
                "capabilities",
                "run `'/opt/my tools/claude' --version` to see why".to_owned(),
            ),
            (
                "database",
                format!("move the database away: {mv} (the shim starts a new one)"),
            ),
            ("permissions", chmod_dir.to_owned()),
            ("permissions", chmod_db.to_owned()),
            (
                "recursion guard",
                "`unset CLAUDE_SHIM_GUARD` (only the shim should set it)".to_owned(),
            ),
        ];
        assert_eq!(got, want);
        // However narrow, each command stays whole on a line of its own.
        let mut out = Vec::new();
        print(&mut out, &judge(&f), Style::PLAIN, Some(40)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for cmd in [chmod_dir, chmod_db, mv] {
            assert!(text.lines().any(|l| l.contains(cmd)), "{cmd} in\n{text}");
        }
    }

    #[test]
    fn a_refused_data_directory_is_named_as_the_reason_not_home() {
        let mut f = good();
        f.data_dir_mode = None;
        f.data_dir_refused = Some((
            "cannot use /d: permission denied".into(),
            "check the path, or set CLAUDE_SHIM_HOME elsewhere".into(),
        ));
        f.db_path = None;
        f.db_exists = false;
        f.db_health = None;
        let checks = judge(&f);
        let db = checks.iter().find(|c| c.name == "database").unwrap();
        assert!(!db.detail.contains("HOME"), "{db:?}");
        assert!(db.detail.contains("data directory is refused"), "{db:?}");
        let perm = checks.iter().find(|c| c.name == "permissions");
        let perm = perm.expect("the refusal is said even without a mode");
        assert_eq!(perm.level, Level::Fail);
        assert!(perm.detail.contains("permission denied"), "{perm:?}");

        f.data_dir = None;
        f.data_dir_refused = None;
        let checks = judge(&f);
        let db = checks.iter().find(|c| c.name == "database").unwrap();
        assert_eq!(db.detail, "no data directory (HOME is unset)");
    }

    #[test]
    fn alias_mode_is_a_working_set_up() {
        let mut f = good();
        f.link = "missing".into();
        f.path_claude = Some("/usr/bin/claude".into());
        f.path_claude_is_shim = false;
        f.mode = Some("alias".into());
        f.claude_shim_on_path = Some("/c/claude-shim".into());
        assert_eq!(worst(&f).0, Level::Info, "{:?}", judge(&f));
        let path = judge(&f).into_iter().find(|c| c.name == "claude on PATH");
        assert!(path.is_some_and(|c| c.detail.starts_with("alias mode")));
    }

    #[test]
    fn informational_states_are_not_failures() {
        let mut f = good();
        f.db_exists = false;
        f.db_health = None;
        f.db_mode = None;
        f.guard = Some("1:4242".into());
        f.recent_errors = vec!["1700000000 probing failed".into()];
        assert_eq!(worst(&f).0, Level::Info);
        let mut out = Vec::new();
        print(&mut out, &judge(&f), Style::PLAIN, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("not created yet"), "{text}");
        assert!(text.contains("probing failed"), "{text}");
        assert!(text.contains("depth 1"), "{text}");
        let _: PathBuf = f.shim_dir;
    }

    #[test]
    fn a_terminal_of_80_columns_gets_lines_that_fit() {
        let mut f = good();
        let deep = "/home/someone/.local/share/a-rather/deeply/nested/place/for/tools";
        f.data_dir = Some(format!("{deep}/claude-shim").into());
        f.db_path = Some(format!("{deep}/claude-shim/shim.db").into());
        f.data_dir_mode = Some(0o755);
        f.path_claude_is_shim = false;
        f.path_claude = Some(format!("{deep}/bin/claude").into());
        f.real = Some(format!("{deep}/node_modules/.bin/claude").into());
        let checks = judge(&f);
        assert!(checks.iter().any(|c| c.fix.is_some()), "a fix to wrap");
        let mut out = Vec::new();
        print(&mut out, &checks, Style::PLAIN, Some(80)).unwrap();
        let fitted = String::from_utf8(out).unwrap();
        let mut full = Vec::new();
        print(&mut full, &checks, Style::PLAIN, None).unwrap();
        let full = String::from_utf8(full).unwrap();
        assert!(
            full.lines().any(|l| l.chars().count() > 80),
            "wide without a width"
        );
        for l in fitted.lines() {
            // Only a word longer than the column (a path, a command) may overrun.
            let longest = l
                .split_whitespace()
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0);
            assert!(
                l.chars().count() <= 80 || longest > 80 - 28,
                "{l}\n{fitted}"
            );
        }
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(flat(&fitted), flat(&full), "only wrapped");
    }
}
