//! The management face, `claude-shim <command>`.

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::Path;

fn env_help() -> String {
    let mut s = String::from("Environment:\n");
    for (name, what) in crate::env::ALL {
        s.push_str(&format!("  {name:<22} {what}\n"));
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
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run as the shim: `claude-shim run -- <claude args…>` (for shell aliases).
    Run {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Dry-run one turn: dialect, turns, identity, pin match (or why not),
    /// and exactly what would be sent. Reads the caller's stdin from FILE or -.
    Explain {
        /// The prompt input the caller would pipe to claude (default: stdin).
        file: Option<std::path::PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// The claude arguments of the call (default: -p).
        #[arg(last = true)]
        args: Vec<OsString>,
    },
}

pub fn main(args: Vec<OsString>) -> ! {
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Run { args } => {
            let me = std::env::current_exe().unwrap_or_else(|_| "claude-shim".into());
            crate::shim::main(Path::new(&me), args)
        }
        Command::Explain { file, json, args } => {
            match crate::explain::run(file.as_deref(), args, json) {
                Ok(code) => std::process::exit(code),
                Err(e) => {
                    eprintln!("claude-shim explain: {e:#}");
                    std::process::exit(1)
                }
            }
        }
    }
}
