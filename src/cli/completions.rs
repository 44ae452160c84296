//! `completions <shell>`: tab completion for `claude-shim`, from the clap
//! definition itself (so it never drifts from the real flags).

use super::Run;
use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;

/// Print a completion script: `claude-shim completions bash > ~/.local/share/bash-completion/completions/claude-shim`
#[derive(Args)]
pub struct Completions {
    #[arg(value_enum)]
    pub shell: Shell,
}

impl Run for Completions {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let mut cmd = super::Cli::command();
        clap_complete::generate(self.shell, &mut cmd, "claude-shim", out);
        Ok(())
    }
}
