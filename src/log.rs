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
    // One write(2) per line: processes appending at once never split one.
    let line = format!("{secs:.6} [{}] {msg}\n", std::process::id());
    let _ = file.write_all(line.as_bytes());
}

/// A failure inside the shim that it worked around (the turn still ran as
/// without the shim). Never printed to the caller's streams — that would make
/// the shim observable — but kept in `<data dir>/errors.log` for `doctor`.
/// Where [`error`] writes, in the data directory.
pub const ERRORS_LOG: &str = "errors.log";

/// Errors this process logged (the metrics count a turn's).
static ERRORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn errors_logged() -> u64 {
    ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}

pub fn error(msg: std::fmt::Arguments<'_>) {
    ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    debug(msg);
    // Only into a directory the shim would use (never created here): one
    // that another user owns or can write may hold a planted errors.log
    // linking to a caller's file.
    let Ok(Some(dir)) = crate::data_dir::DataDir::existing() else {
        return;
    };
    let path = dir.join(ERRORS_LOG);
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
        // One line an error: `doctor` reads them back line by line.
        let msg = msg.to_string().replace('\n', " ");
        let _ = file.write_all(format!("{secs} {msg}\n").as_bytes());
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
