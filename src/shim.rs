//! The shim face: classify the invocation, then exec the real claude
//! untouched or run a managed turn.

use crate::guard::{self, Verdict};
use crate::invocation::{self, Class, Policy};
use crate::{debug, env, locate, passthrough, turn};
use std::ffi::OsString;
use std::path::Path;

pub fn main(invoked_as: &Path, args: Vec<OsString>) -> ! {
    // A panic in the shim's own logic must not reach the caller's streams:
    // it goes to errors.log, and the turn runs as the caller asked.
    std::panic::set_hook(Box::new(|info| {
        crate::error!("internal error: {info}");
    }));
    let pid = std::process::id();
    let ppid = nix::unistd::getppid().as_raw() as u32;
    let guard = match guard::check(env::guard(), pid, ppid) {
        Verdict::Ok { next } => next,
        Verdict::Loop(why) => {
            eprintln!("claude-shim: refusing to loop: {why}");
            std::process::exit(126)
        }
    };
    let real = match locate::real_claude(invoked_as) {
        Ok(real) => real,
        Err(e) => {
            eprintln!("claude-shim: {e}");
            // As a shell: 127 for nothing there, 126 for something that
            // cannot be executed (or a loop).
            let cannot_exec = match e {
                locate::LocateError::OverrideIsShim(_) => true,
                locate::LocateError::BadOverride(_) => env::real().is_some_and(|p| p.exists()),
                locate::LocateError::NotFound => false,
            };
            std::process::exit(if cannot_exec { 126 } else { 127 })
        }
    };
    match invocation::classify(&args, Policy::from_env()) {
        Class::PassThrough(reason) => {
            debug!("pass-through ({}) to {}", reason.describe(), real.display());
            exec_or_die(&real, &args, &guard)
        }
        Class::Managed(managed) => turn::run(&real, args, managed, &guard),
    }
}

/// exec the real binary; if even that fails, say so the way a shell would.
pub fn exec_or_die(real: &Path, args: &[OsString], guard: &str) -> ! {
    cannot_run(real, &passthrough::exec(real, args, guard))
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
