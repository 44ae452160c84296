//! Debug log: appended to `CLAUDE_SHIM_LOG` when set, never to the caller's
//! streams. Logging must never fail a turn, so errors are ignored.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

pub fn debug(msg: std::fmt::Arguments<'_>) {
    let Some(path) = crate::env::log_file() else {
        return;
    };
    let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let _ = writeln!(file, "{secs:.3} [{}] {msg}", std::process::id());
}

/// A failure inside the shim that it worked around (the turn still ran as
/// without the shim). Never printed to the caller's streams — that would make
/// the shim observable — but kept in `<data dir>/errors.log` for `doctor`.
pub fn error(msg: std::fmt::Arguments<'_>) {
    debug(msg);
    let Some(dir) = crate::env::data_dir() else {
        return;
    };
    // Only into a directory the shim would use: one that another user owns
    // or can write may hold a planted errors.log linking to a caller's file.
    if !crate::store::is_private_dir(&dir) {
        return;
    }
    let path = dir.join("errors.log");
    // Keep the file small: start over past 1 MiB.
    let truncate = std::fs::symlink_metadata(&path).is_ok_and(|m| m.len() > 1 << 20);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(!truncate)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path);
    if let Ok(mut file) = file {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let _ = writeln!(file, "{secs} {msg}");
    }
}

#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log::debug(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::log::error(format_args!($($arg)*)) };
}
