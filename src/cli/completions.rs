//! `completions <shell> [--install]`: tab completion for `claude-shim`, from
//! the clap definition itself (so it never drifts from the real flags),
//! printed or written where the shell looks for it.

use anyhow::{bail, Context, Result};
use clap::Args;
use clap_complete::Shell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Print a completion script, or write it where your shell finds it (--install).
#[derive(Args)]
pub struct Completions {
    #[arg(value_enum)]
    pub shell: Shell,
    /// Write the script to the shell's usual place (bash-completion's user
    /// dir, ~/.zfunc, fish's completions dir) instead of printing it.
    #[arg(long)]
    pub install: bool,
}

/// The program the scripts complete (a clap command, not a process).
const BIN: &str = "claude-shim";

/// The script for `shell`, completing `full`, the whole clap definition.
pub fn script(shell: Shell, full: &clap::Command) -> Result<Vec<u8>> {
    // Hidden commands (the keeper, which shims start) are not for people
    // to type: clap_complete offers them all, so they are left out here.
    let mut cmd = clap::Command::new(BIN)
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
    // Into a buffer: `generate` panics when its writer fails (a closed pipe).
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut buf);
    match shell {
        Shell::Bash => {
            let text = String::from_utf8(buf).context("clap_complete wrote non-UTF-8")?;
            buf = fix_bash(&text).into_bytes();
        }
        Shell::Fish => buf.extend_from_slice(fish_positionals(&cmd).as_bytes()),
        _ => {}
    }
    Ok(buf)
}

/// clap_complete (4.6.11 and before) spells the state of a hyphenated binary
/// two ways: the loop over the typed words arrives at
/// `claude__shim__subcmd__init`, the `case` arms that complete each
/// subcommand are labelled `claude__subcmd__shim__subcmd__init`. No arm ever
/// matches, so nothing past the first word completes (clap-rs/clap#6421).
/// Spell the arms the loop's way; on a fixed clap_complete this finds nothing.
fn fix_bash(script: &str) -> String {
    script.replace("claude__subcmd__shim", "claude__shim")
}

/// clap_complete's fish script completes subcommands and flags but not the
/// values of a positional argument: `claude-shim init <TAB>` offered file
/// names. Add them from the same clap definition, once per command line.
fn fish_positionals(cmd: &clap::Command) -> String {
    let mut out = String::new();
    for sub in cmd.get_subcommands() {
        for arg in sub.get_positionals() {
            let possible = arg.get_possible_values();
            let values: Vec<&str> = possible
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name())
                .collect();
            if values.is_empty() {
                continue;
            }
            let list = values.join(" ");
            out.push_str(&format!(
                "complete -c claude-shim -n \"__fish_claude_shim_using_subcommand {}; \
                 and not __fish_seen_subcommand_from {list}\" -f -a \"{list}\"\n",
                sub.get_name()
            ));
        }
    }
    out
}

/// What decides where a script goes; read from the environment and the
/// file system by [`Place::from_env`], so the choice itself is pure.
#[derive(Debug, Clone, Default)]
pub struct Place {
    pub home: PathBuf,
    pub xdg_data_home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub bash_completion_user_dir: Option<PathBuf>,
    /// Whether the bash-completion package is installed (it loads the user dir).
    pub bash_completion_found: bool,
    /// `$FPATH`, when the shell exported it.
    pub fpath: Vec<PathBuf>,
    pub zdotdir: Option<PathBuf>,
    /// The text of `.zshrc`.
    pub zshrc: String,
}

/// Where a script goes and what the user still has to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub file: PathBuf,
    pub note: Option<String>,
}

fn non_empty(name: &str) -> Option<PathBuf> {
    crate::env::dir(name)
}

impl Place {
    pub fn from_env() -> Result<Place> {
        let home = non_empty("HOME").context("HOME is not set")?;
        let zdotdir = non_empty("ZDOTDIR");
        let zshrc = zdotdir.as_deref().unwrap_or(&home).join(".zshrc");
        Ok(Place {
            xdg_data_home: non_empty("XDG_DATA_HOME"),
            xdg_config_home: non_empty("XDG_CONFIG_HOME"),
            bash_completion_user_dir: non_empty("BASH_COMPLETION_USER_DIR"),
            bash_completion_found: [
                "/usr/share/bash-completion/bash_completion",
                "/etc/bash_completion",
                "/usr/local/share/bash-completion/bash_completion",
                "/opt/homebrew/etc/profile.d/bash_completion.sh",
            ]
            .iter()
            .any(|p| Path::new(p).exists()),
            fpath: crate::env::fpath(),
            zshrc: std::fs::read_to_string(zshrc).unwrap_or_default(),
            zdotdir,
            home,
        })
    }

    fn tilde(&self, p: &Path) -> String {
        match p.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => p.display().to_string(),
        }
    }

    /// Where `shell` looks for the completion of `claude-shim`.
    pub fn target(&self, shell: Shell) -> Result<Target> {
        match shell {
            Shell::Bash => {
                // bash-completion loads <user dir>/completions/<command> on
                // the first TAB after the command's name.
                let base = self.bash_completion_user_dir.clone().unwrap_or_else(|| {
                    self.xdg_data_home
                        .clone()
                        .unwrap_or_else(|| self.home.join(".local/share"))
                        .join("bash-completion")
                });
                let file = base.join("completions/claude-shim");
                let note = (!self.bash_completion_found).then(|| {
                    format!(
                        "the bash-completion package loads this file, and it does not seem to \
                         be installed: install it, or add `source {}` to ~/.bashrc",
                        crate::text::quote::posix(&file.to_string_lossy())
                    )
                });
                Ok(Target { file, note })
            }
            Shell::Zsh => {
                // A directory of the user's already on $fpath, else ~/.zfunc
                // (rustup's and cargo's suggestion), which .zshrc must add.
                let mine = self
                    .fpath
                    .iter()
                    .find(|d| d.starts_with(&self.home) && d.is_dir());
                if let Some(dir) = mine {
                    return Ok(Target {
                        file: dir.join("_claude-shim"),
                        note: None,
                    });
                }
                let dir = self.home.join(".zfunc");
                let rc = self.zdotdir.as_deref().unwrap_or(&self.home).join(".zshrc");
                let note = (!self.zshrc.contains(".zfunc")).then(|| {
                    format!(
                        "add `fpath+=~/.zfunc` to {} before `compinit` runs \
                         (with oh-my-zsh: before it is sourced)",
                        self.tilde(&rc)
                    )
                });
                Ok(Target {
                    file: dir.join("_claude-shim"),
                    note,
                })
            }
            Shell::Fish => {
                let config = self
                    .xdg_config_home
                    .clone()
                    .unwrap_or_else(|| self.home.join(".config"));
                Ok(Target {
                    file: config.join("fish/completions/claude-shim.fish"),
                    note: None,
                })
            }
            other => bail!(
                "--install knows bash, zsh and fish; for {other}, print the script \
                 (`claude-shim completions {other}`) and load it as your shell's documentation says"
            ),
        }
    }
}

impl Completions {
    /// The command, for `full`, the whole clap definition (it is defined
    /// above this module, with every subcommand).
    pub fn run(&self, full: &clap::Command, out: &mut dyn Write) -> Result<()> {
        let script = script(self.shell, full)?;
        if !self.install {
            out.write_all(&script)?;
            return Ok(());
        }
        let target = Place::from_env()?.target(self.shell)?;
        let replaced = target.file.exists();
        crate::whole_file::write(&target.file, &script, 0o644)
            .with_context(|| format!("writing {}", target.file.display()))?;
        let verb = if replaced { "updated" } else { "wrote" };
        writeln!(
            out,
            "{verb} {} completion: {}",
            self.shell,
            target.file.display()
        )?;
        if let Some(note) = &target.note {
            writeln!(out, "To load it, {note}.")?;
        }
        writeln!(out, "It takes effect in new shells.")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The whole clap definition, as `cli::main` hands it over.
    fn full() -> clap::Command {
        crate::cli::Cli::command()
    }

    fn place() -> Place {
        Place {
            home: "/h".into(),
            bash_completion_found: true,
            ..Place::default()
        }
    }

    #[test]
    fn bash_case_arms_match_the_states_the_loop_sets() {
        let text = String::from_utf8(script(Shell::Bash, &full()).unwrap()).unwrap();
        assert!(!text.contains("claude__subcmd__shim"), "unfixed arms left");
        for sub in ["init", "stats", "log", "status", "completions"] {
            let state = format!("claude__shim__subcmd__{sub}");
            assert!(
                text.contains(&format!("cmd=\"{state}\"")),
                "{sub}: no state"
            );
            assert!(text.contains(&format!("{state})")), "{sub}: no case arm");
        }
    }

    #[test]
    fn fish_gets_the_values_of_positional_arguments() {
        let text = String::from_utf8(script(Shell::Fish, &full()).unwrap()).unwrap();
        assert!(
            text.contains("function __fish_claude_shim_using_subcommand"),
            "the condition the added lines use is defined"
        );
        assert!(
            text.contains("__fish_claude_shim_using_subcommand init; and not __fish_seen_subcommand_from bash zsh fish\" -f -a \"bash zsh fish\""),
            "{text}"
        );
    }

    #[test]
    fn each_shell_has_its_usual_place() {
        let p = place();
        let file = |p: &Place, sh| p.target(sh).unwrap().file;
        assert_eq!(
            file(&p, Shell::Bash),
            Path::new("/h/.local/share/bash-completion/completions/claude-shim")
        );
        assert_eq!(
            file(&p, Shell::Fish),
            Path::new("/h/.config/fish/completions/claude-shim.fish")
        );
        let zsh = p.target(Shell::Zsh).unwrap();
        assert_eq!(zsh.file, Path::new("/h/.zfunc/_claude-shim"));
        assert!(zsh.note.unwrap().contains("fpath+=~/.zfunc"));
        assert!(p.target(Shell::Bash).unwrap().note.is_none());

        let xdg = Place {
            xdg_data_home: Some("/x/data".into()),
            xdg_config_home: Some("/x/config".into()),
            ..place()
        };
        assert_eq!(
            file(&xdg, Shell::Bash),
            Path::new("/x/data/bash-completion/completions/claude-shim")
        );
        assert_eq!(
            file(&xdg, Shell::Fish),
            Path::new("/x/config/fish/completions/claude-shim.fish")
        );
        let user_dir = Place {
            bash_completion_user_dir: Some("/bc".into()),
            ..xdg
        };
        assert_eq!(
            file(&user_dir, Shell::Bash),
            Path::new("/bc/completions/claude-shim")
        );
        let no_package = Place {
            bash_completion_found: false,
            ..place()
        };
        let note = no_package.target(Shell::Bash).unwrap().note.unwrap();
        assert!(
            note.contains("source /h/.local/share/bash-completion"),
            "{note}"
        );
    }

    #[test]
    fn zsh_uses_a_home_dir_already_on_fpath_and_knows_a_configured_zfunc() {
        let t = tempfile::tempdir().unwrap();
        let mine = t.path().join("zfuncs");
        std::fs::create_dir(&mine).unwrap();
        let p = Place {
            home: t.path().into(),
            fpath: vec!["/usr/share/zsh/functions".into(), mine.clone()],
            ..place()
        };
        assert_eq!(
            p.target(Shell::Zsh).unwrap(),
            Target {
                file: mine.join("_claude-shim"),
                note: None
            }
        );
        let configured = Place {
            zshrc: "fpath+=~/.zfunc\nautoload -Uz compinit && compinit\n".into(),
            ..place()
        };
        assert_eq!(configured.target(Shell::Zsh).unwrap().note, None);
        assert!(place().target(Shell::Elvish).is_err());
    }
}
