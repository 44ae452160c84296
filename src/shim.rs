//! The shim face: classify the invocation, then exec the real claude
//! untouched or run a managed turn.

use crate::guard::{self, Verdict};
use crate::invocation::{self, Class, Policy};
use crate::runner::exec::exec_or_die;
use crate::{debug, env, locate, turn};
use std::ffi::OsString;
use std::path::Path;

pub fn main(invoked_as: &Path, args: Vec<OsString>) -> ! {
    crate::timeline::begin();
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
