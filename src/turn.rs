//! One managed turn: read the prompt, decide, run the real claude, record.
//! Every failure inside the shim degrades to running the caller's original
//! argv and input unchanged.

use crate::invocation::{InputFormat, Managed};
use crate::prompt::{self, Prompt};
use crate::runner::{self, signals::ChildPid, Spec, StdinPlan};
use crate::store::runs::{Kind, Run};
use crate::store::Store;
use crate::{debug, error};
use std::ffi::OsString;
use std::path::Path;

pub fn run(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> ! {
    let child = ChildPid::default();
    if let Err(e) = runner::prepare_signals(&child) {
        error!("signal setup failed ({e}); passing through");
        crate::shim::exec_or_die(real, &args, guard);
    }
    let prompt = match prompt::read(&managed.args, managed.input) {
        Ok(p) => p,
        Err(e) => {
            // Nothing was consumed that we could replay faithfully.
            error!("reading the prompt failed ({e}); passing through");
            crate::shim::exec_or_die(real, &args, guard);
        }
    };
    let spec = Spec {
        program: real.to_path_buf(),
        args: args.clone(),
        stdin: original_stdin(&prompt, managed.input),
        output: managed.output,
        hold: false,
        guard: guard.to_owned(),
    };
    let finished = match runner::run(spec, &child) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("claude-shim: cannot run {}: {e}", real.display());
            std::process::exit(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
        }
    };
    let obs = &finished.observation;
    debug!("managed run ended: {:?}", finished.exit);
    log_run(&Run {
        cwd: &cwd(),
        kind: Kind::Unchanged,
        exit: finished.exit.as_i32(),
        bytes_in: prompt.len(),
        bytes_sent: prompt.len(),
        result: obs.result.as_ref(),
        session: obs.init_session.as_deref(),
        note: None,
    });
    finished.exit.reproduce()
}

/// Stdin that replays exactly what the caller sent.
fn original_stdin(prompt: &Prompt, input: InputFormat) -> StdinPlan {
    match prompt {
        Prompt::Positional { .. } => StdinPlan::Inherit,
        Prompt::Stdin { bytes } => StdinPlan::Bytes(bytes.clone()),
        Prompt::StreamJson { before, line } => {
            let mut b = before.clone();
            b.extend_from_slice(line);
            StdinPlan::BytesThenForward(b)
        }
        Prompt::None { inherit: true, .. } => StdinPlan::Inherit,
        Prompt::None { bytes, .. } if input == InputFormat::StreamJson => {
            StdinPlan::BytesThenForward(bytes.clone())
        }
        Prompt::None { bytes, .. } => StdinPlan::Bytes(bytes.clone()),
    }
}

fn cwd() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn log_run(run: &Run<'_>) {
    match Store::open_default() {
        Ok(store) => {
            if let Err(e) = store.log_run(run) {
                error!("recording the run failed: {e:#}");
            }
        }
        Err(e) => error!("store unavailable: {e:#}"),
    }
}
