//! Whether a turn can write what it records: room on the data directory's
//! file system, and what a turn writes, tried and undone. A data directory
//! on a read-only or full file system reads fine (the database is `ok`, the
//! permissions 0700, errors.log empty), while every turn runs as without
//! the shim: nothing is recorded, resumed or kept warm. [`gather`] looks
//! (effects); [`judge`] says so, with a fix (pure).

use super::checks::{check, code, quoted, Check, Level};
use super::facts::{Facts, Space, Trial, WriteCause};
use crate::cli::human;
use crate::data_dir::DataDir;
use crate::store::Store;
use std::path::Path;

/// Below this a turn fails to record itself: the store's write-ahead log
/// alone grows to 512 KiB between checkpoints.
pub const MIN_FREE: u64 = 1 << 20;
/// Below this, say that it will fill.
pub const LOW_FREE: u64 = 16 << 20;

const NAME_SPACE: &str = "disk space";
const NAME_WRITES: &str = "writes";

/// The room on the data directory's file system, and a turn's writes tried
/// in it (the store's, or a file's beside a shared store). Creates nothing
/// that outlives it.
pub fn gather(f: &mut Facts) {
    let Some(dir) = f.data_dir.clone() else {
        return;
    };
    f.data_dir_space = space(&dir);
    if f.data_dir_refused.is_some() {
        return;
    }
    let Ok(Some(d)) = DataDir::existing_at(&dir) else {
        return;
    };
    // A damaged database fails its own check, with its fix: here only the
    // directory is tried then (as beside a shared store).
    let healthy = f.db_error.is_none()
        && f.db_health
            .as_ref()
            .is_none_or(|h| h.quick_check == "ok" && h.schema_version <= h.schema_expected);
    let (trial, tried) = match f.db_shared.is_none() && healthy {
        true => (Trial::Store, Store::trial(&d)),
        false => (Trial::File, scratch_file(&d)),
    };
    f.write_trial = Some(trial);
    if let Err(e) = tried {
        f.write_cause = Some(cause(&e, f.data_dir_space.as_ref()));
        f.write_error = Some(format!("{e:#}"));
    }
}

/// statvfs(3) of `dir`, or of the nearest directory above it that exists.
// The counts are u64 on Linux, u32 on macOS.
#[allow(clippy::unnecessary_cast)]
fn space(dir: &Path) -> Option<Space> {
    use nix::sys::statvfs::{statvfs, FsFlags};
    let at = dir.ancestors().find(|p| p.exists())?;
    let s = statvfs(at).ok()?;
    // Root may use the blocks reserved for it; others may not.
    let root = nix::unistd::geteuid().is_root();
    let (blocks, files) = match root {
        true => (s.blocks_free(), s.files_free()),
        false => (s.blocks_available(), s.files_available()),
    };
    Some(Space {
        at: at.to_path_buf(),
        free_bytes: (blocks as u64).saturating_mul(s.fragment_size() as u64),
        free_inodes: files as u64,
        total_inodes: s.files() as u64,
        read_only: s.flags().contains(FsFlags::ST_RDONLY),
    })
}

/// A file written and removed in the data directory (beside a shared
/// store: errors.log, the keeper's socket and markers live there).
fn scratch_file(dir: &DataDir) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let name = format!(".doctor-trial-{}", std::process::id());
    let path = dir.join(&name);
    let mut file = dir
        .create_private(&name)
        .with_context(|| format!("creating a file in {}", dir.path().display()))?;
    let written = file
        .write_all(&[0; 4096])
        .and_then(|()| file.sync_data())
        .with_context(|| format!("writing a file in {}", dir.path().display()));
    let _ = std::fs::remove_file(&path);
    written
}

/// What an error comes down to: the first cause in its chain that says.
fn cause(e: &anyhow::Error, space: Option<&Space>) -> WriteCause {
    use nix::errno::Errno;
    use rusqlite::ErrorCode;
    for c in e.chain() {
        if let Some(code) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|e| e.raw_os_error())
        {
            match Errno::from_raw(code) {
                Errno::EROFS => return WriteCause::ReadOnly,
                Errno::ENOSPC | Errno::EDQUOT => return WriteCause::Full,
                Errno::EACCES | Errno::EPERM => return WriteCause::Denied,
                _ => {}
            }
        }
        if let Some(rusqlite::Error::SqliteFailure(f, _)) = c.downcast_ref::<rusqlite::Error>() {
            match f.code {
                ErrorCode::ReadOnly => return WriteCause::ReadOnly,
                ErrorCode::DiskFull => return WriteCause::Full,
                ErrorCode::PermissionDenied => return WriteCause::Denied,
                _ => {}
            }
        }
    }
    match space {
        Some(s) if s.read_only => WriteCause::ReadOnly,
        Some(s) if s.free_bytes < MIN_FREE => WriteCause::Full,
        _ => WriteCause::Other,
    }
}

/// `checks` (doctor's other checks) with these after the data directory's
/// own, and `recent errors` told when errors.log cannot be written.
pub fn with(mut checks: Vec<Check>, f: &Facts) -> Vec<Check> {
    let at = checks
        .iter()
        .rposition(|c| c.name == "permissions" || c.name == "database")
        .map_or(checks.len(), |i| i + 1);
    checks.splice(at..at, judge(f));
    if f.write_error.is_some() {
        if let Some(c) = checks
            .iter_mut()
            .find(|c| c.name == "recent errors" && c.level == Level::Ok)
        {
            c.level = Level::Info;
            c.detail = "none recorded: errors.log cannot be written either (see writes)".into();
        }
    }
    checks
}

/// The problems of these checks (for `status`).
pub fn trouble(f: &Facts) -> Vec<Check> {
    judge(f)
        .into_iter()
        .filter(|c| c.level >= Level::Warn)
        .collect()
}

pub fn judge(f: &Facts) -> Vec<Check> {
    let Some(dir) = f
        .data_dir
        .as_deref()
        .filter(|_| f.data_dir_refused.is_none())
    else {
        return vec![];
    };
    let mut out = Vec::new();
    out.extend(f.data_dir_space.as_ref().and_then(space_check));
    out.extend(write_check(f, dir));
    out
}

/// Every turn runs as without the shim; said the same way wherever it is.
const STOPPED: &str = "every turn runs as without the shim: nothing is recorded, resumed or \
                       kept warm";

fn room_fix(at: &Path) -> String {
    format!(
        "make room on that file system ({} shows it), or set CLAUDE_SHIM_HOME to a directory \
         of your own on another one",
        code(&format!("df -h {}", quoted(at)))
    )
}

fn read_only_fix() -> String {
    "remount that file system read-write, or set CLAUDE_SHIM_HOME to a writable directory of \
     your own"
        .into()
}

fn space_check(s: &Space) -> Option<Check> {
    let free = human::bytes(s.free_bytes as i64);
    let at = s.at.display();
    if s.read_only {
        // The writes check says it, with what failed.
        return None;
    }
    if s.total_inodes > 0 && s.free_inodes == 0 {
        return Some(check(
            NAME_SPACE,
            Level::Fail,
            format!(
                "no inodes left on the file system of {at} (no file can be created): {STOPPED}"
            ),
            Some(&room_fix(&s.at)),
        ));
    }
    if s.free_bytes < MIN_FREE {
        return Some(check(
            NAME_SPACE,
            Level::Fail,
            format!(
                "{free} free on the file system of {at}, below the {} a turn needs to record \
                 itself: {STOPPED}",
                human::bytes(MIN_FREE as i64)
            ),
            Some(&room_fix(&s.at)),
        ));
    }
    if s.free_bytes < LOW_FREE {
        return Some(check(
            NAME_SPACE,
            Level::Warn,
            format!(
                "{free} free on the file system of {at}: turns stop being recorded when it fills"
            ),
            Some(&room_fix(&s.at)),
        ));
    }
    Some(check(
        NAME_SPACE,
        Level::Ok,
        format!("{free} free ({at})"),
        None,
    ))
}

fn write_check(f: &Facts, dir: &Path) -> Option<Check> {
    let shown = dir.display();
    let Some(trial) = f.write_trial else {
        // Not there yet: the first turn creates it, if it can.
        let s = f.data_dir_space.as_ref().filter(|s| s.read_only)?;
        return Some(check(
            NAME_WRITES,
            Level::Fail,
            format!(
                "{shown} does not exist and cannot be created: {} is on a read-only file \
                 system, so {STOPPED}",
                s.at.display()
            ),
            Some(&read_only_fix()),
        ));
    };
    let Some(e) = &f.write_error else {
        let what = match trial {
            Trial::File => "a file written and removed",
            Trial::Store => "a turn's writes to the store tried and rolled back",
        };
        return Some(check(
            NAME_WRITES,
            Level::Ok,
            format!("{shown}: {what}"),
            None,
        ));
    };
    let (why, fix) = match f.write_cause.unwrap_or(WriteCause::Other) {
        WriteCause::ReadOnly => ("it is on a read-only file system", read_only_fix()),
        WriteCause::Full => (
            "its file system is full",
            room_fix(f.data_dir_space.as_ref().map_or(dir, |s| &s.at)),
        ),
        WriteCause::Denied => (
            "this user may not write there",
            format!(
                "{} (the files in it too), or set CLAUDE_SHIM_HOME to a directory of your own",
                code(&format!("chmod u+rwX -R {}", quoted(dir)))
            ),
        ),
        WriteCause::Other => (
            "the write failed",
            "fix what the error names, or set CLAUDE_SHIM_HOME to another directory of your own"
                .into(),
        ),
    };
    Some(check(
        NAME_WRITES,
        Level::Fail,
        format!(
            "a turn cannot write in {shown}: {why}. So {STOPPED}, and errors.log cannot be \
             written.\nthe error: {e}"
        ),
        Some(&fix),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(space: Space) -> Facts {
        Facts {
            data_dir: Some("/d".into()),
            data_dir_space: Some(space),
            write_trial: Some(Trial::Store),
            ..Facts::default()
        }
    }

    fn roomy() -> Space {
        Space {
            at: "/d".into(),
            free_bytes: 10 << 30,
            free_inodes: 1000,
            total_inodes: 2000,
            read_only: false,
        }
    }

    fn levels(f: &Facts) -> Vec<(&'static str, Level)> {
        judge(f).into_iter().map(|c| (c.name, c.level)).collect()
    }

    #[test]
    fn a_roomy_writable_dir_is_ok() {
        let f = facts(roomy());
        assert_eq!(
            levels(&f),
            [("disk space", Level::Ok), ("writes", Level::Ok)]
        );
        assert!(trouble(&f).is_empty());
    }

    #[test]
    fn a_full_file_system_fails_with_a_fix() {
        let mut f = facts(Space {
            free_bytes: 0,
            ..roomy()
        });
        f.write_error = Some("switching to WAL: database or disk is full".into());
        f.write_cause = Some(WriteCause::Full);
        let checks = judge(&f);
        assert!(checks.iter().all(|c| c.level == Level::Fail), "{checks:#?}");
        assert!(checks[0].detail.starts_with("0 B free"), "{checks:#?}");
        assert!(checks[1].detail.contains("its file system is full"));
        for c in &checks {
            assert!(c.fix.as_deref().unwrap().contains("`df -h /d`"), "{c:?}");
        }
        assert_eq!(trouble(&f).len(), 2);
    }

    #[test]
    fn a_read_only_file_system_fails_once() {
        let mut f = facts(Space {
            read_only: true,
            ..roomy()
        });
        f.write_error =
            Some("opening /d/shim.db for writing: Read-only file system (os error 30)".into());
        f.write_cause = Some(WriteCause::ReadOnly);
        let checks = judge(&f);
        assert_eq!(checks.len(), 1, "{checks:#?}");
        assert_eq!(checks[0].level, Level::Fail);
        assert!(checks[0].detail.contains("read-only file system"));
        assert!(checks[0].fix.as_deref().unwrap().contains("remount"));
    }

    #[test]
    fn low_space_warns_and_no_inodes_fails() {
        let f = facts(Space {
            free_bytes: 8 << 20,
            ..roomy()
        });
        assert_eq!(levels(&f)[0], ("disk space", Level::Warn));
        let f = facts(Space {
            free_inodes: 0,
            ..roomy()
        });
        assert_eq!(levels(&f)[0], ("disk space", Level::Fail));
        // A file system that does not count inodes never runs out.
        let f = facts(Space {
            free_inodes: 0,
            total_inodes: 0,
            ..roomy()
        });
        assert_eq!(levels(&f)[0], ("disk space", Level::Ok));
    }

    #[test]
    fn a_missing_dir_on_a_read_only_file_system_fails() {
        let mut f = facts(Space {
            at: "/".into(),
            read_only: true,
            ..roomy()
        });
        f.write_trial = None;
        let checks = judge(&f);
        assert_eq!(levels(&f), [("writes", Level::Fail)], "{checks:#?}");
        f.data_dir_space = Some(roomy());
        assert_eq!(levels(&f), [("disk space", Level::Ok)]);
    }

    #[test]
    fn recent_errors_say_the_log_cannot_be_written() {
        let mut f = facts(roomy());
        let before = vec![
            check("database", Level::Ok, "ok".into(), None),
            check("recent errors", Level::Ok, "none".into(), None),
        ];
        let names = |c: &[Check]| c.iter().map(|c| c.name).collect::<Vec<_>>();
        let ok = with(before.clone(), &f);
        assert_eq!(
            names(&ok),
            ["database", "disk space", "writes", "recent errors"]
        );
        assert_eq!(ok[3].detail, "none");
        f.write_error = Some("x".into());
        let failed = with(before, &f);
        assert_eq!(failed[3].level, Level::Info);
        assert!(failed[3].detail.contains("cannot be written"));
    }

    #[test]
    fn causes_are_read_from_the_chain() {
        let io = |errno: i32| {
            anyhow::Error::from(std::io::Error::from_raw_os_error(errno)).context("opening x")
        };
        assert_eq!(cause(&io(nix::libc::EROFS), None), WriteCause::ReadOnly);
        assert_eq!(cause(&io(nix::libc::ENOSPC), None), WriteCause::Full);
        assert_eq!(cause(&io(nix::libc::EACCES), None), WriteCause::Denied);
        assert_eq!(cause(&io(nix::libc::EIO), None), WriteCause::Other);
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let e = anyhow::Error::from(full).context("switching to WAL");
        assert_eq!(cause(&e, None), WriteCause::Full);
        let other = anyhow::anyhow!("something");
        let ro = Space {
            read_only: true,
            ..roomy()
        };
        assert_eq!(cause(&other, Some(&ro)), WriteCause::ReadOnly);
    }
}
