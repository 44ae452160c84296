//! Pass-through: replace the shim with the real binary (exec), so exit status,
//! signals, the terminal and every stream are the real CLI's own.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Never returns unless exec failed; then the caller reports it.
pub fn exec(real: &Path, args: &[OsString], guard: &str) -> std::io::Error {
    // std resets SIGPIPE and the signal mask in the new image; SIGXFSZ is ours.
    crate::runner::signals::restore_file_size_limit();
    Command::new(real)
        .args(args)
        .env(crate::env::GUARD, guard)
        .exec()
}
