//! The management face, `claude-shim <command>`: clap types here, one module
//! per subcommand behind [`Run`], helpers each in a module of their own.

mod chart;
mod command;
mod completions;
pub mod doctor;
/// `claude-shim explain`: a dry run of one turn.
mod explain;
mod forget;
mod gc;
pub(crate) mod human;
mod id_prefix;
pub mod init;
pub mod install;
mod log;
pub mod metrics;
pub mod origin;
mod output;
mod pins;
pub mod rc;
pub mod route_key;
/// The sessions `sessions` lists: Claude Code's, with what the shim knows.
pub mod session_list;
mod sessions;
mod stats;
mod status;
pub(crate) mod store_access;
pub(crate) mod style;
mod tally;
pub(crate) mod warm;

pub use command::Run;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use command::Failed;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use store_access::{UnreadableStore, STORE_FIX};

fn env_help() -> String {
    let width = crate::env::ALL
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    let mut s = String::from("Environment:\n");
    // Test knobs are for the test suite (docs/environment.md lists them).
    for (name, what) in crate::env::ALL
        .iter()
        .filter(|(n, _)| !n.starts_with("CLAUDE_SHIM_TEST_"))
    {
        s.push_str(&format!("  {name:<width$}  {what}\n"));
    }
    s
}

#[derive(Parser)]
#[command(
    name = "claude-shim",
    version,
    about = "A drop-in `claude` that resumes the session a replayed conversation already lives in",
    after_help = env_help()
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Dry-run one turn: dialect, turns, identity, pin match (or why not),
    /// and exactly what would be sent. Reads the caller's stdin from FILE or -.
    Explain(Explain),
    Install(install::Install),
    Uninstall(install::Uninstall),
    Init(init::Init),
    Doctor(doctor::Doctor),
    Status(status::Status),
    Stats(stats::Stats),
    Log(log::Log),
    Metrics(metrics::Metrics),
    Pins(pins::Pins),
    Sessions(sessions::Sessions),
    Forget(forget::Forget),
    Gc(gc::Gc),
    Completions(completions::Completions),
    RouteKey(route_key::RouteKey),
    Warm(warm::Warm),
    /// Run as the shim: `claude-shim run -- <claude args…>` (what the alias
    /// mode of `init` calls; you do not need it otherwise).
    Run {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// The keeper of live CLIs (started by the shim on demand).
    #[command(hide = true)]
    Keeper(warm::KeeperCmd),
}

#[derive(clap::Args)]
pub struct Explain {
    /// The prompt input the caller would pipe to claude (default: stdin).
    file: Option<std::path::PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// The claude arguments of the call (default: -p).
    #[arg(last = true)]
    args: Vec<OsString>,
}

impl Run for Explain {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        explain::run(self.file.as_deref(), self.args.clone(), self.json, out)
    }
}

/// `completions`, given what it completes: the clap definition, here above
/// every subcommand.
struct CompletionsOf<'a>(&'a completions::Completions);

impl Run for CompletionsOf<'_> {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        self.0.run(&Cli::command(), out)
    }
}

pub fn main(args: Vec<OsString>) -> ! {
    let cli = Cli::parse_from(args);
    let command: &dyn Run = match &cli.command {
        Command::Run { args } => {
            let me = std::env::current_exe().unwrap_or_else(|_| "claude-shim".into());
            crate::shim::main(Path::new(&me), args.clone())
        }
        Command::Explain(c) => c,
        Command::Install(c) => c,
        Command::Uninstall(c) => c,
        Command::Init(c) => c,
        Command::Doctor(c) => c,
        Command::Status(c) => c,
        Command::Stats(c) => c,
        Command::Log(c) => c,
        Command::Metrics(c) => c,
        Command::Pins(c) => c,
        Command::Sessions(c) => c,
        Command::Forget(c) => c,
        Command::Gc(c) => c,
        Command::Completions(c) => &CompletionsOf(c),
        Command::RouteKey(c) => c,
        Command::Warm(c) => c,
        Command::Keeper(c) => c,
    };
    let mut out = output::Output::new(std::io::stdout().lock());
    let result = command
        .run(&mut out)
        .and_then(|()| out.flush().map_err(Into::into));
    if out.closed() {
        // `claude-shim log | head`: the reader has all it wanted, unless
        // the command's verdict is its status (`doctor | true`).
        let failed = result
            .as_ref()
            .err()
            .and_then(|e| e.downcast_ref::<Failed>());
        let Some(Failed(why)) = failed else {
            std::process::exit(0)
        };
        let _ = writeln!(std::io::stderr(), "claude-shim: {why}");
        std::process::exit(1)
    }
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            // Not eprintln!: it panics when stderr is gone too.
            let mut err = std::io::stderr();
            let _ = writeln!(err, "claude-shim: {e:#}");
            if e.downcast_ref::<UnreadableStore>().is_some() {
                let _ = writeln!(
                    err,
                    "claude-shim: turns still run, as without the shim; {STORE_FIX}"
                );
            }
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_table_lists_every_variable() {
        let doc = include_str!("../../docs/environment.md");
        for (name, _) in crate::env::ALL {
            assert!(
                doc.contains(&format!("| `{name}` |")),
                "docs/environment.md's table lacks {name}"
            );
        }
    }
}
