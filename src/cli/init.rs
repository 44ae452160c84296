//! `init <shell>`: print the shell integration from the real script files in
//! `shell/`. The shim directory is baked into the printed script (quoted for
//! that shell) rather than looked up when it is sourced: the rc line runs
//! `claude-shim init` at every shell start anyway, so the value is always the
//! one `CLAUDE_SHIM_HOME`/`--dir` give then, at no extra cost.

use super::command::Run;
use super::install;
use crate::text::quote;
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};

const PLACEHOLDER: &str = "__CLAUDE_SHIM_DIR__";

/// Print the shell integration; add `eval "$(claude-shim init bash)"` to
/// ~/.bashrc (zsh likewise; fish: `claude-shim init fish | source`).
#[derive(Args)]
pub struct Init {
    #[arg(value_enum)]
    pub shell: Shell,
    /// path: the shim directory goes first on PATH (scripts and IDEs see it
    /// too). alias: `claude` in this interactive shell only.
    #[arg(long, value_enum, default_value_t = Mode::Path)]
    pub mode: Mode,
    /// Shim directory for path mode [default: $CLAUDE_SHIM_HOME/bin]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Path,
    Alias,
}

fn template(shell: Shell, mode: Mode) -> &'static str {
    match (shell, mode) {
        (Shell::Bash, Mode::Path) => include_str!("../../shell/path.bash"),
        (Shell::Bash, Mode::Alias) => include_str!("../../shell/alias.bash"),
        (Shell::Zsh, Mode::Path) => include_str!("../../shell/path.zsh"),
        (Shell::Zsh, Mode::Alias) => include_str!("../../shell/alias.zsh"),
        (Shell::Fish, Mode::Path) => include_str!("../../shell/path.fish"),
        (Shell::Fish, Mode::Alias) => include_str!("../../shell/alias.fish"),
    }
}

/// The script for `shell` and `mode` with `dir` filled in.
pub fn render(shell: Shell, mode: Mode, dir: &Path) -> String {
    let dir = dir.to_string_lossy();
    let quoted = match shell {
        Shell::Bash | Shell::Zsh => quote::posix(&dir),
        Shell::Fish => quote::fish(&dir),
    };
    template(shell, mode).replace(PLACEHOLDER, &quoted)
}

impl Run for Init {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let dir = install::shim_dir(self.dir.as_deref())?;
        out.write_all(render(self.shell, self.mode, &dir).as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_scripts_carry_the_quoted_dir_and_alias_scripts_call_run() {
        let dir = Path::new("/tmp/a b/it's");
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let path = render(shell, Mode::Path, dir);
            assert!(!path.contains(PLACEHOLDER));
            let quoted = match shell {
                Shell::Fish => r"'/tmp/a b/it\'s'",
                _ => r"'/tmp/a b/it'\''s'",
            };
            assert!(path.contains(quoted), "{shell:?}: {path}");
            let alias = render(shell, Mode::Alias, dir);
            assert!(alias.contains("claude-shim run --"), "{shell:?}");
            assert!(!alias.contains("/tmp/a b"), "alias mode needs no dir");
        }
    }
}
