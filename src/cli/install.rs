//! `install` / `uninstall`: the shim directory with a `claude` link to this
//! binary. rustup's rule: a correct link is left alone, a stale link of ours
//! is updated, anything else is never overwritten or removed. The real
//! `claude` lives elsewhere and is never touched.

use super::command::Run;
use super::rc::RcShell;
use crate::text::quote;
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Put the shim in front of `claude`: create the shim directory with a
/// `claude` link to this binary, and print the line for your shell's rc.
#[derive(Args)]
pub struct Install {
    /// Shim directory [default: $CLAUDE_SHIM_HOME/bin]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Remove the `claude` link that `install` made (nothing else).
#[derive(Args)]
pub struct Uninstall {
    /// Shim directory [default: $CLAUDE_SHIM_HOME/bin]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// What sits at `<dir>/claude`.
#[derive(Debug, PartialEq, Eq)]
pub enum Existing {
    Missing,
    /// Our link, pointing at this very binary.
    Current,
    /// Our link from another build or location (its target names `claude-shim`).
    Stale(PathBuf),
    /// Our link to a binary that no longer exists: a package manager removed
    /// claude-shim (none can remove this link). Every PATH lookup skips it.
    Gone(PathBuf),
    /// Something else: never ours to replace or remove.
    Foreign(String),
}

/// The shim directory: `--dir`, else `<data dir>/bin`; made absolute so it
/// can be baked into shell scripts.
pub fn shim_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => crate::env::data_dir()
            .context("no data directory: set CLAUDE_SHIM_HOME or HOME")?
            .join("bin"),
    };
    Ok(std::path::absolute(&dir)?)
}

/// This binary, resolved (the link must outlive the way we were started).
pub fn this_exe() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot tell where this binary is")?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

pub fn classify(link: &Path, me: &Path) -> Existing {
    let Ok(meta) = std::fs::symlink_metadata(link) else {
        return Existing::Missing;
    };
    let same_file = |p: &Path| {
        let (a, b) = (std::fs::metadata(p), std::fs::metadata(me));
        matches!((a, b), (Ok(a), Ok(b)) if a.dev() == b.dev() && a.ino() == b.ino())
    };
    if !meta.file_type().is_symlink() {
        return if same_file(link) {
            Existing::Current
        } else {
            Existing::Foreign("a file".into())
        };
    }
    let target = std::fs::read_link(link).unwrap_or_default();
    if same_file(link) {
        return Existing::Current;
    }
    let named_ours = target
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("claude-shim"));
    if named_ours && std::fs::metadata(link).is_err() {
        Existing::Gone(target)
    } else if named_ours {
        Existing::Stale(target)
    } else {
        Existing::Foreign(format!("a link to {}", target.display()))
    }
}

/// Make `link` point at `to`, replacing what is there in one rename.
fn relink(link: &Path, to: &Path) -> Result<()> {
    let tmp = link.with_file_name(format!(".claude.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(to, &tmp)
        .with_context(|| format!("creating a link in {}", tmp.display()))?;
    std::fs::rename(&tmp, link).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("replacing {}", link.display())
    })
}

fn refuse(link: &Path, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is {what}, not claude-shim's; left it alone. \
         Move it away yourself, or pick another directory with --dir",
        link.display()
    )
}

impl Run for Install {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let dir = shim_dir(self.dir.as_deref())?;
        let me = this_exe()?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let link = dir.join("claude");
        match classify(&link, &me) {
            Existing::Current => {
                writeln!(out, "{} already links to {}", link.display(), me.display())?
            }
            Existing::Missing => {
                // Not a rename: something that appeared meanwhile is not ours.
                std::os::unix::fs::symlink(&me, &link)
                    .with_context(|| format!("creating {}", link.display()))?;
                writeln!(out, "linked {} -> {}", link.display(), me.display())?;
            }
            Existing::Stale(old) | Existing::Gone(old) => {
                let gone = if old.exists() { "" } else { ", which is gone" };
                relink(&link, &me)?;
                writeln!(
                    out,
                    "updated {} -> {} (was -> {}{gone})",
                    link.display(),
                    me.display(),
                    old.display()
                )?;
            }
            Existing::Foreign(what) => return Err(refuse(&link, &what)),
        }
        let custom = self.dir.is_some().then_some(dir.as_path());
        let shell = RcShell::from_env();
        let wanted = shell.line(&invocation_name(&me), custom);
        match shell.find_init() {
            // A line for another directory would put the wrong one on PATH.
            Some((rc, line)) if !names_dir(&line, custom) => {
                writeln!(
                    out,
                    "\n{} runs `claude-shim init` for another directory:\n  {line}\n\
                     Change it to this, then open a new shell:\n  {wanted}",
                    home_relative(&rc)
                )?;
            }
            Some((rc, _)) => writeln!(
                out,
                "{} already runs `claude-shim init`: new shells use the shim.",
                home_relative(&rc)
            )?,
            None => {
                writeln!(
                    out,
                    "\nAdd this line to {}, then open a new shell:",
                    shell.rc()
                )?;
                writeln!(out, "  {wanted}")?;
            }
        }
        if on_path(&dir) && shell != RcShell::Fish {
            // bash and zsh remember where they found a command: shells that
            // ran `claude` before the link existed keep running the real one.
            writeln!(
                out,
                "{} is on PATH already: in shells that ran `claude` before, run `hash -r` \
                 (bash) or `rehash` (zsh) once.",
                dir.display()
            )?;
        }
        let origin = super::origin::detect(&me);
        let cannot = match origin {
            super::origin::Origin::Unknown => String::new(),
            ref o => format!(" ({} cannot)", o.name()),
        };
        writeln!(
            out,
            "\nTo remove claude-shim later: `{} uninstall` first, which removes this link{cannot}, \
             then `{}`.",
            invocation_name(&me),
            origin.remove_command(&me)
        )?;
        Ok(())
    }
}

/// Whether an rc line sets up `dir` (None: the default directory).
fn names_dir(line: &str, dir: Option<&Path>) -> bool {
    match dir {
        Some(d) => line.contains(&*d.to_string_lossy()),
        None => !line.contains("--dir"),
    }
}

/// Whether `dir` is an entry of PATH.
fn on_path(dir: &Path) -> bool {
    std::env::split_paths(&crate::env::path()).any(|d| d == dir)
}

/// `~/x` for a path under HOME, for messages.
fn home_relative(p: &Path) -> String {
    let home = crate::env::home_text();
    super::human::tilde(&p.to_string_lossy(), home.as_deref())
}

impl Run for Uninstall {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let dir = shim_dir(self.dir.as_deref())?;
        let link = dir.join("claude");
        match classify(&link, &this_exe()?) {
            Existing::Missing => {
                writeln!(out, "nothing to remove: {} does not exist", link.display())?
            }
            Existing::Foreign(what) => return Err(refuse(&link, &what)),
            Existing::Current | Existing::Stale(_) | Existing::Gone(_) => {
                std::fs::remove_file(&link)
                    .with_context(|| format!("removing {}", link.display()))?;
                writeln!(out, "removed {}", link.display())?;
                // Only our own default directory goes, and only when empty.
                if self.dir.is_none() && std::fs::remove_dir(&dir).is_ok() {
                    writeln!(out, "removed {}", dir.display())?;
                }
            }
        }
        let left = left_behind(self.dir.as_deref().map(|_| dir.as_path()));
        if !left.is_empty() {
            writeln!(
                out,
                "\nLeft in place (remove them yourself if you want them gone):"
            )?;
            for (what, how) in left {
                writeln!(out, "  {what}\n    {how}")?;
            }
        }
        Ok(())
    }
}

/// What `uninstall` leaves, each with how to remove it: the data directory
/// (pins and the runs log in shim.db, errors.log), a directory the user
/// named, the rc line.
fn left_behind(custom_dir: Option<&Path>) -> Vec<(String, String)> {
    let mut left = Vec::new();
    if let Some(dir) = custom_dir.filter(|d| d.exists()) {
        left.push((
            format!("{} (the directory you named with --dir)", dir.display()),
            format!("rmdir {}", quote::posix(&dir.to_string_lossy())),
        ));
    }
    if let Some(data) = crate::env::data_dir().filter(|d| d.exists()) {
        let held: Vec<&str> = [
            (
                crate::store::DB_FILE,
                "shim.db: pins and the runs log behind stats and log",
            ),
            ("errors.log", "errors.log"),
        ]
        .iter()
        .filter(|(f, _)| data.join(f).exists())
        .map(|(_, what)| *what)
        .collect();
        let holds = if held.is_empty() {
            String::new()
        } else {
            format!(" ({})", held.join("; "))
        };
        left.push((
            format!("{}{holds}", data.display()),
            format!("rm -r {}", quote::posix(&data.to_string_lossy())),
        ));
    }
    if let Some((rc, line)) = RcShell::from_env().find_init() {
        left.push((
            format!("the line in {}: {line}", home_relative(&rc)),
            "delete it from that file (it runs claude-shim at every shell start)".into(),
        ));
    }
    if let Ok(me) = this_exe() {
        let origin = super::origin::detect(&me);
        let by = match origin {
            super::origin::Origin::Unknown => String::new(),
            ref o => format!(", installed by {}", o.name()),
        };
        left.push((
            format!("the claude-shim binary ({}{by})", me.display()),
            origin.remove_command(&me),
        ));
    }
    left
}

/// How to name this binary in the rc line: plain `claude-shim` when that is
/// what PATH finds, else its absolute path.
pub fn invocation_name(me: &Path) -> String {
    let on_path = which::which("claude-shim")
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .is_some_and(|p| p == me);
    if on_path {
        "claude-shim".into()
    } else {
        me.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn classifies_what_is_there() {
        let t = tempfile::tempdir().unwrap();
        let me = t.path().join("claude-shim");
        std::fs::write(&me, "me").unwrap();
        let other = t.path().join("claude-real");
        std::fs::write(&other, "real").unwrap();
        let at = |name: &str| t.path().join(name);

        assert_eq!(classify(&at("none"), &me), Existing::Missing);
        symlink(&me, at("ok")).unwrap();
        assert_eq!(classify(&at("ok"), &me), Existing::Current);
        std::fs::hard_link(&me, at("hard")).unwrap();
        assert_eq!(classify(&at("hard"), &me), Existing::Current);
        let old = t.path().join("old/claude-shim");
        symlink(&old, at("gone")).unwrap();
        assert_eq!(classify(&at("gone"), &me), Existing::Gone(old.clone()));
        std::fs::create_dir(t.path().join("old")).unwrap();
        std::fs::write(&old, "an older build").unwrap();
        symlink(&old, at("stale")).unwrap();
        assert_eq!(classify(&at("stale"), &me), Existing::Stale(old));
        symlink(&other, at("theirs")).unwrap();
        assert!(
            matches!(classify(&at("theirs"), &me), Existing::Foreign(w) if w.contains("claude-real"))
        );
        assert!(matches!(classify(&other, &me), Existing::Foreign(w) if w == "a file"));
        symlink(t.path().join("gone"), at("dangling")).unwrap();
        assert!(matches!(
            classify(&at("dangling"), &me),
            Existing::Foreign(_)
        ));
    }
}
