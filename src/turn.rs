//! One managed turn: read the prompt, decide, run the real claude, record,
//! and fall back once when a resume is refused. Every failure inside the shim
//! degrades to running the caller's original argv and input.

use crate::decide::{self, Decision};
use crate::invocation::{InputFormat, Managed};
use crate::plan::Plan;
use crate::prompt::{self, Prompt};
use crate::runner::{self, signals::ChildPid, Finished, Spec, StdinPlan};
use crate::store::runs::{Kind, Run};
use crate::store::Store;
use crate::{debug, error};
use std::ffi::OsString;
use std::path::Path;

pub fn run(real: &Path, args: Vec<OsString>, managed: Managed, guard: &str) -> ! {
    runner::signals::ignore_file_size_limit();
    let child = ChildPid::default();
    if let Err(e) = runner::prepare_signals(&child) {
        error!("signal setup failed ({e}); passing through");
        crate::shim::exec_or_die(real, &args, guard);
    }
    let prompt = match prompt::read(&managed.args, managed.input) {
        Ok(p) => p,
        Err(e) => {
            error!("reading the prompt failed ({e}); passing through");
            crate::shim::exec_or_die(real, &args, guard);
        }
    };
    let original = original_stdin(&prompt, managed.input);
    let spawn = |args: Vec<OsString>, stdin: StdinPlan, hold: bool| {
        let spec = Spec {
            program: real.to_path_buf(),
            args,
            stdin,
            output: managed.output,
            hold,
            guard: guard.to_owned(),
        };
        runner::run(spec, &child).unwrap_or_else(|e| crate::shim::cannot_run(real, &e))
    };

    let mut decision = match decide::decide(real, &managed, &prompt, guard) {
        Ok(Some(d)) => d,
        Ok(None) => {
            debug!("prompt not understood; running unchanged");
            let f = spawn(args, original, false);
            log_unchanged(&prompt, &f);
            f.exit.reproduce()
        }
        Err(e) => {
            error!("shim bypassed: {e:#}");
            let f = spawn(args, original, false);
            f.exit.reproduce()
        }
    };
    debug!("plan: {:?}", decision.plan);

    let (plan_args, plan_stdin, sent) = attempt(&decision, &args, &prompt, &original);
    let resuming = matches!(decision.plan, Plan::Resume { .. });
    let first = spawn(plan_args, plan_stdin, resuming);
    let (finished, kind) = if resuming && !first.released() && may_be_refusal(&first, &child) {
        // Refused before the caller saw anything: forget it, run fresh once.
        first.discard();
        child.between();
        debug!("resume refused ({:?}); rerunning fresh", first.exit);
        decision.refused();
        let args = crate::rewrite::argv(&decision.plan, &args);
        (spawn(args, original, false), Kind::Fallback)
    } else {
        first.release();
        (first, decision.kind())
    };
    let sent = if kind == Kind::Fallback {
        prompt.len()
    } else {
        sent
    };
    if succeeded(&finished) {
        decision.record(&finished.observation);
    }
    decision.log(&Run {
        cwd: &decision.cwd,
        kind,
        exit: finished.exit.as_i32(),
        bytes_in: prompt.len(),
        bytes_sent: sent,
        result: finished.observation.result.as_ref(),
        session: Some(decision.plan.target_session()),
        note: None,
    });
    decision.finish();
    finished.exit.reproduce()
}

/// A run that may be pinned: exit 0 and no error result.
fn succeeded(f: &Finished) -> bool {
    f.exit.success() && !f.observation.is_error_result()
}

/// A failed resume attempt the CLI may have refused: it ended by itself with
/// an error. A death by signal, or any end after the caller signalled it, is
/// a stop the caller (or the system) asked for; rerunning would undo it.
fn may_be_refusal(f: &Finished, child: &ChildPid) -> bool {
    !succeeded(f) && matches!(f.exit, runner::Exit::Code(_)) && !child.signalled()
}

/// argv, stdin and prompt size sent for the decided plan.
fn attempt(
    d: &Decision,
    args: &[OsString],
    prompt: &Prompt,
    original: &StdinPlan,
) -> (Vec<OsString>, StdinPlan, usize) {
    let Some(delta) = d.delta() else {
        return (
            crate::rewrite::argv(&d.plan, args),
            original.clone(),
            prompt.len(),
        );
    };
    let sent = delta.len();
    match prompt {
        Prompt::Positional { index, .. } => {
            let args = prompt::replace_positional(args, *index, &delta);
            (
                crate::rewrite::argv(&d.plan, &args),
                StdinPlan::Inherit,
                sent,
            )
        }
        Prompt::Stdin { .. } => (
            crate::rewrite::argv(&d.plan, args),
            StdinPlan::Bytes(delta.into_bytes()),
            sent,
        ),
        Prompt::StreamJson {
            before,
            line,
            more,
            after,
        } => {
            // One line per message: the session holds all but the last.
            let line = match more.last() {
                Some(last) => last.clone(),
                None => match prompt::replace_stream_text(line, &delta) {
                    Some(l) => l,
                    // Cannot rewrite: run as the caller asked (nothing is
                    // pinned since the session seen will not be the planned one).
                    None => return (args.to_vec(), original.clone(), prompt.len()),
                },
            };
            let first = [&before[..], &line[..]].concat();
            let stdin = StdinPlan::Stream {
                first,
                pending: after.clone(),
            };
            (crate::rewrite::argv(&d.plan, args), stdin, line.len())
        }
        Prompt::None { .. } => (args.to_vec(), original.clone(), prompt.len()),
    }
}

/// Stdin that replays exactly what the caller sent.
fn original_stdin(prompt: &Prompt, input: InputFormat) -> StdinPlan {
    match prompt {
        Prompt::Positional { .. } | Prompt::None { inherit: true, .. } => StdinPlan::Inherit,
        Prompt::Stdin { bytes } => StdinPlan::Bytes(bytes.clone()),
        Prompt::StreamJson {
            before,
            line,
            more,
            after,
        } => StdinPlan::Stream {
            first: [&before[..], &line[..], &more.concat()].concat(),
            pending: after.clone(),
        },
        Prompt::None { bytes, .. } if input == InputFormat::StreamJson => StdinPlan::Stream {
            first: bytes.clone(),
            pending: Vec::new(),
        },
        Prompt::None { bytes, .. } => StdinPlan::Bytes(bytes.clone()),
    }
}

/// Runs the shim did not touch still count in the stats.
fn log_unchanged(prompt: &Prompt, f: &Finished) {
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run = Run {
        cwd: &cwd,
        kind: Kind::Unchanged,
        exit: f.exit.as_i32(),
        bytes_in: prompt.len(),
        bytes_sent: prompt.len(),
        result: f.observation.result.as_ref(),
        session: f.observation.init_session.as_deref(),
        note: None,
    };
    match Store::open_default().and_then(|s| s.log_run(&run)) {
        Ok(()) => {}
        Err(e) => error!("recording the run failed: {e:#}"),
    }
}
