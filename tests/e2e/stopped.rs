//! A stopped caller (issue 50, finding 4): SIGSTOP to the pid the caller
//! started stops the CLI itself when there is no shim, so nothing reaches
//! the model until SIGCONT. Through the shim the CLI is another process:
//! it went on and called the model 0.59 s in while the call was stopped.
//! The shim's watcher now stops the CLIs it started while it is stopped, and
//! continues them with it; cold and warm alike.

use crate::support::process::describe;
use crate::support::{RealCli, World};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The state letters of the real CLI's processes of this world.
fn cli_states(w: &World) -> Vec<char> {
    let real = std::fs::canonicalize(RealCli::path()).expect("the real CLI");
    w.processes()
        .into_iter()
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref() == Some(&real))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let close = stat.rfind(')')?;
            stat[close + 2..].chars().next()
        })
        .collect()
}

/// Start `cmd`, stop it 0.3 s in; 1 s later, the model's requests so far
/// and the states of the real CLIs; then continue it and let it end.
fn stopped_for_a_while(w: &World, mut cmd: Command) -> (usize, Vec<char>, crate::support::Ran) {
    w.server.clear_log();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn");
    let pid = Pid::from_raw(child.id() as i32);
    std::thread::sleep(Duration::from_millis(300));
    kill(pid, Signal::SIGSTOP).expect("stop");
    std::thread::sleep(Duration::from_secs(1));
    let states = cli_states(w);
    std::thread::sleep(Duration::from_secs(2));
    let while_stopped = w.server.main_requests().len();
    kill(pid, Signal::SIGCONT).expect("continue");
    let out = child.wait_with_output().expect("wait");
    let mut ran = crate::support::Ran::from(out);
    ran.elapsed = start.elapsed();
    (while_stopped, states, ran)
}

/// Cold, the shim's CLI is stopped with it and asks nothing until the call
/// continues, as directly. Warm, the live CLI got the message within
/// milliseconds, before any stop could come; it is stopped with the call
/// all the same (the keeper's other CLIs are not).
#[test]
fn a_stopped_call_stops_its_cli() {
    for warm in [false, true] {
        let mut w = World::warm(warm);
        w.server.set_reply(|_| "an answer".to_owned());
        // Slow answers: a warm turn is still under way when the stop comes.
        w.server.set_latency(Duration::from_millis(1_500));
        for msg in ["one", "two"] {
            let r = w.turn(msg);
            assert!(r.status.success(), "{}", describe(&r));
        }
        let prompt = w.prompt("three");
        let (direct_sent, direct_states, direct) =
            stopped_for_a_while(&w, w.sb.direct(["-p", &prompt]));
        assert_eq!(direct_sent, 0, "directly, a stopped CLI sends nothing");
        assert!(direct_states.contains(&'T'), "{direct_states:?}");
        let (sent, states, through) = stopped_for_a_while(&w, w.sb.shimmed(["-p", &prompt]));
        if !warm {
            assert_eq!(
                sent,
                0,
                "nothing reached the model while stopped\n{}",
                w.log()
            );
        }
        assert_eq!(
            states.iter().filter(|&&s| s == 'T').count(),
            1,
            "warm {warm}: the call's CLI stopped with it: {states:?}\n{}",
            w.log()
        );
        assert_eq!(
            through.how(),
            direct.how(),
            "warm {warm}: {}",
            describe(&through)
        );
        assert_eq!(through.out(), direct.out(), "warm {warm}");
        assert_eq!(
            w.last_engine(),
            if warm { "warm" } else { "cold" },
            "{}",
            w.log()
        );
    }
}
