//! Pass-through: replace the shim with the real binary (exec), so exit status,
//! signals, the terminal and every stream are the real CLI's own; and how a
//! real binary that cannot be started is reported (exec or spawn alike).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Never returns unless exec failed; then the caller reports it.
pub fn exec(real: &Path, args: &[OsString], guard: &str) -> std::io::Error {
    // std resets SIGPIPE and the signal mask in the new image; SIGXFSZ is ours.
    super::signals::restore_file_size_limit();
    Command::new(real)
        .args(args)
        .env(crate::env::GUARD, guard)
        .exec()
}

/// exec the real binary; if even that fails, say so the way a shell would.
pub fn exec_or_die(real: &Path, args: &[OsString], guard: &str) -> ! {
    cannot_run(real, &exec(real, args, guard))
}

/// The real binary could not be started (exec or spawn): report it and exit
/// as a shell would, 127 when it is not there, 126 when it cannot run.
pub fn cannot_run(real: &Path, err: &std::io::Error) -> ! {
    eprintln!("claude-shim: cannot run {}: {err}", real.display());
    std::process::exit(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}
