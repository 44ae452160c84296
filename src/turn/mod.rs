//! One managed turn, as stages in flow order:
//!
//! 1. [`understand`]: the prompt as a conversation;
//! 2. [`lookup`]: identity, pins, the session file, the in-place lease;
//! 3. [`plan`]: the pure decision, and [`why`] it was taken;
//! 4. [`attempt`]: argv and input for the plan (pure);
//! 5. run: the real CLI, its output teed and observed (`crate::runner`);
//! 6. [`record`]: the pin at the result, the run in the log.
//!
//! [`managed_turn`] takes a prompt that has been read through them: stages
//! 1–4 in `managed`, 5 and 6 in `execute`; [`run`], here, reads it first.
//!
//! Launched cold, warm ([`warm`]: a live CLI's next turn) or after the Agent
//! SDK handshake ([`handshake`], with the answer to `initialize` it may give
//! itself: [`initialize`]).
//!
//! Every failure inside the shim degrades to running the caller's original
//! argv and input, and so does a panic in the shim's own logic.

pub mod attempt;
/// What moves a turn's cached prefix, and why it missed its cache (`pub`
/// for the benches, which time it).
pub mod cache;
mod caller_side;
pub mod content;
mod execute;
pub mod handshake;
pub mod initialize;
mod launch;
pub mod lookup;
mod managed;
pub mod plan;
pub mod record;
mod relay;
pub mod understand;
pub mod warm;
/// The watches of an Agent SDK turn's two processes.
mod watches;
pub mod why;

pub use execute::sweep_ephemeral;
pub use launch::{Cold, Ctx, Launch};
pub use managed::{managed_turn, unchanged};

use crate::invocation::Managed;
use crate::prompt::{self, Prompt};
use crate::runner::{self, signals::ChildPid, Exit};
use crate::{debug, error};
pub use attempt::Attempt;
use std::ffi::OsString;
use std::path::Path;

pub fn run(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> ! {
    turn(real, args, managed, guard).reproduce()
}

fn turn(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> Exit {
    debug!("turn: managed");
    // With no working directory (deleted under the caller) there is no
    // place to look a conversation up in, and the CLI refuses to start:
    // it runs as asked, and says so itself.
    if let Err(e) = std::env::current_dir() {
        debug!("no working directory ({e}); passing through");
        crate::runner::exec::exec_or_die(real, &args, guard);
    }
    // Nothing of a data directory that is not private is read, written or
    // connected to (its config, store, keeper, remembered answers): the
    // call runs as without the shim, and `doctor` says why.
    if let Err(why) = crate::data_dir::DataDir::open() {
        debug!("data directory refused ({why}); passing through");
        crate::runner::exec::exec_or_die(real, &args, guard);
    }
    runner::signals::ignore_file_size_limit();
    let child = ChildPid::default();
    if let Err(e) = runner::prepare_signals(&child) {
        error!("signal setup failed ({e}); passing through");
        crate::runner::exec::exec_or_die(real, &args, guard);
    }
    let opening = lookup::Opening::start(real, guard);
    // A caller that turned persistence off gets a session the shim owns:
    // its runs go without the flag (see `Ownership::Ephemeral`).
    let session_args = match managed.ephemeral {
        true => crate::argv::without(&args, &managed.args, "no-session-persistence"),
        false => args.clone(),
    };
    let parsed = match managed.ephemeral {
        true => crate::argv::parse(&session_args).unwrap_or_else(|_| managed.args.clone()),
        false => managed.args.clone(),
    };
    let output = managed.output;
    let mut known = None;
    let mut answered = |lines: &[u8]| {
        known = handshake::answerable(real, output, &session_args, lines);
        known.is_some()
    };
    let prompt = match prompt::read_knowing(&parsed, managed.input, &mut answered) {
        Ok(p) => p,
        Err(e) => {
            error!("reading the prompt failed ({e}); passing through");
            crate::runner::exec::exec_or_die(real, &args, guard);
        }
    };
    let managed = Managed {
        args: parsed,
        ..managed
    };
    let ctx = Ctx {
        real,
        guard,
        child,
        managed: &managed,
        args: &session_args,
        answered: Default::default(),
        live: Default::default(),
        opening,
        cold: Default::default(),
    };
    match prompt {
        Prompt::Waiting { before, complete } => handshake::run(&ctx, before, complete, known),
        prompt => {
            let original = attempt::original(&prompt, &args, managed.input);
            let sdk = match &prompt {
                Prompt::StreamJson { before, .. } if !before.is_empty() => {
                    handshake::together(&ctx, before, known)
                }
                _ => None,
            };
            match warm::Warm::new(&ctx, &prompt, sdk) {
                Some(mut w) => managed_turn(&ctx, &prompt, &original, &mut w),
                None => managed_turn(&ctx, &prompt, &original, &mut Cold),
            }
        }
    }
}
