//! The shim's data directory (`CLAUDE_SHIM_HOME`, else
//! `$XDG_DATA_HOME/claude-shim`, else `~/.local/share/claude-shim`): its
//! config, store, keeper socket, remembered answers and logs.
//!
//! Everything in it steers what the shim does with a caller's conversation
//! (a `config.toml` names the store transcripts go to; the keeper socket
//! receives every turn, API keys included; a remembered answer reaches the
//! caller's SDK). So it is trusted only when nobody else can change it: the
//! directory is ours and closed to others' writes, and so is every directory
//! above it (root's, or sticky like `/tmp`, are fine: nobody can swap what is
//! ours there). That is checked before anything in it is read, written or
//! connected to; a [`DataDir`] value is the proof, and nothing reaches the
//! directory without one. Files are created exclusively and never through a
//! symlink. See RELIABILITY.md, "Threat model".

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A data directory found private (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir(PathBuf);

/// Why a data directory is not used.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("no data directory: set CLAUDE_SHIM_HOME or HOME")]
    Unset,
    #[error("{} is not a directory", .0.display())]
    NotADir(PathBuf),
    #[error("{} belongs to another user (uid {uid})", .path.display())]
    NotOurs { path: PathBuf, uid: u32 },
    #[error("{} is {mode:04o}, writable by others (want 0700)", .path.display())]
    OpenToOthers { path: PathBuf, mode: u32 },
    #[error(
        "{} (above the data directory) {why}, so another user could swap the directory",
        .path.display()
    )]
    UnsafeAbove { path: PathBuf, why: String },
    #[error("cannot use {}: {err}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },
}

impl Refused {
    /// What to do about it, for people (`doctor`, `status`).
    pub fn fix(&self) -> String {
        match self {
            Refused::Unset => "set HOME, or CLAUDE_SHIM_HOME to a directory of your own".into(),
            Refused::OpenToOthers { path: p, .. } => {
                // A code span: `doctor` wraps its fixes but never inside one.
                format!(
                    "`chmod 700 {}`",
                    crate::text::quote::posix(&p.to_string_lossy())
                )
            }
            Refused::NotOurs { .. } | Refused::UnsafeAbove { .. } | Refused::NotADir(_) => {
                "set CLAUDE_SHIM_HOME to a directory of your own (0700), in a directory only you \
                 and root can change"
                    .into()
            }
            Refused::Io { .. } => "check the path, or set CLAUDE_SHIM_HOME elsewhere".into(),
        }
    }
}

/// The configured path (not yet checked).
pub fn configured() -> Option<PathBuf> {
    crate::env::data_dir()
}

impl DataDir {
    /// The configured data directory, created 0700 when missing; refused when
    /// it is not private.
    pub fn open() -> Result<DataDir, Refused> {
        let path = configured().ok_or(Refused::Unset)?;
        Self::open_at(&path)
    }

    /// The configured data directory if it exists and is private; `Ok(None)`
    /// when it does not exist (nothing is created).
    pub fn existing() -> Result<Option<DataDir>, Refused> {
        let path = configured().ok_or(Refused::Unset)?;
        Self::existing_at(&path)
    }

    /// `path`, created 0700 when missing, if private.
    pub fn open_at(path: &Path) -> Result<DataDir, Refused> {
        if std::fs::symlink_metadata(path).is_err() {
            // Above it first: never create inside a directory others can change.
            check_above(path)?;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|err| Refused::Io {
                    path: path.to_owned(),
                    err,
                })?;
        }
        Self::check(path)
    }

    /// `path` if it exists and is private.
    pub fn existing_at(path: &Path) -> Result<Option<DataDir>, Refused> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            _ => Self::check(path).map(Some),
        }
    }

    /// Whether `path` is private, creating nothing.
    pub fn check(path: &Path) -> Result<DataDir, Refused> {
        let meta = std::fs::metadata(path).map_err(|err| Refused::Io {
            path: path.to_owned(),
            err,
        })?;
        if !meta.is_dir() {
            return Err(Refused::NotADir(path.to_owned()));
        }
        let me = nix::unistd::geteuid().as_raw();
        if meta.uid() != me {
            return Err(Refused::NotOurs {
                path: path.to_owned(),
                uid: meta.uid(),
            });
        }
        if meta.mode() & 0o022 != 0 {
            return Err(Refused::OpenToOthers {
                path: path.to_owned(),
                mode: meta.mode() & 0o7777,
            });
        }
        // The path as given (a link in it could be swapped) and where it leads.
        check_above(path)?;
        let real = path.canonicalize().map_err(|err| Refused::Io {
            path: path.to_owned(),
            err,
        })?;
        if real != path {
            check_above(&real)?;
        }
        Ok(DataDir(path.to_owned()))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A file or directory of the data directory, by name.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }

    /// A subdirectory of ours, created 0700 when missing; refused when it is
    /// a link or not ours.
    pub fn subdir(&self, name: &str) -> std::io::Result<PathBuf> {
        let dir = self.0.join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let meta = std::fs::symlink_metadata(&dir)?;
        let me = nix::unistd::geteuid().as_raw();
        if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
            return Err(std::io::Error::other(format!(
                "{} is not a private directory of ours",
                dir.display()
            )));
        }
        Ok(dir)
    }

    /// A new file of ours, by name: created here and now (never one that was
    /// there, nor through a planted link), private from its first byte.
    pub fn create_private(&self, name: impl AsRef<Path>) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(self.0.join(name))
    }

    /// The contents of a file of ours (`None`: there is none). A link, or a
    /// file someone else owns or may write, is refused.
    pub fn read(&self, name: impl AsRef<Path>) -> std::io::Result<Option<Vec<u8>>> {
        read_private(&self.0.join(name))
    }
}

/// A file we trust: opened without following a link, ours, closed to
/// others' writes. `None`: it does not exist.
pub fn read_private(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private file of ours",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Every directory above `path` is root's or ours, and closed to others'
/// writes unless sticky (then nobody can rename what is ours in it).
/// Group-writable is allowed only for our own primary group (the per-user
/// groups most systems give).
fn check_above(path: &Path) -> Result<(), Refused> {
    let me = nix::unistd::geteuid().as_raw();
    let my_group = nix::unistd::getegid().as_raw();
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|err| Refused::Io {
                path: path.to_owned(),
                err,
            })?
            .join(path)
    };
    for dir in absolute.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            // Not there yet (it will be created ours), or not ours to see.
            continue;
        };
        let mode = meta.mode();
        let sticky = mode & 0o1000 != 0;
        let why = if meta.uid() != 0 && meta.uid() != me {
            Some(format!("belongs to another user (uid {})", meta.uid()))
        } else if mode & 0o002 != 0 && !sticky {
            Some(format!("is {:04o}, writable by everyone", mode & 0o7777))
        } else if mode & 0o020 != 0 && !sticky && meta.gid() != my_group {
            Some(format!(
                "is {:04o}, writable by group {}",
                mode & 0o7777,
                meta.gid()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Refused::UnsafeAbove {
                path: dir.to_owned(),
                why,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn created_private_and_checked() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/data");
        let d = DataDir::open_at(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(d.path(), dir);
        assert!(DataDir::existing_at(&t.path().join("none"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn open_to_others_is_refused_and_nothing_created_below_a_shared_dir() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        for mode in [0o777, 0o770, 0o1777, 0o722] {
            chmod(&dir, mode);
            assert!(
                matches!(DataDir::check(&dir), Err(Refused::OpenToOthers { .. })),
                "{mode:o}"
            );
        }
        chmod(&dir, 0o755);
        assert!(DataDir::check(&dir).is_ok(), "readable is fine");
        // Below a directory everyone may write (not sticky): refused, and
        // not even created.
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let inside = open.join("data");
        assert!(matches!(
            DataDir::open_at(&inside),
            Err(Refused::UnsafeAbove { .. })
        ));
        assert!(!inside.exists());
        // Sticky (as /tmp): nobody can swap what is ours in it.
        chmod(&open, 0o1777);
        assert!(DataDir::open_at(&inside).is_ok());
    }

    #[test]
    fn a_link_to_a_private_dir_is_checked_where_it_leads() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        chmod(&real, 0o700);
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(DataDir::check(&link).is_ok());
        chmod(&real, 0o777);
        assert!(DataDir::check(&link).is_err());
    }

    #[test]
    fn private_reads_refuse_links_and_files_open_to_others() {
        let t = tempfile::tempdir().unwrap();
        let d = DataDir::open_at(&t.path().join("d")).unwrap();
        assert!(d.read("config.toml").unwrap().is_none());
        std::fs::write(d.join("config.toml"), "x").unwrap();
        chmod(&d.join("config.toml"), 0o600);
        assert_eq!(d.read("config.toml").unwrap().unwrap(), b"x");
        chmod(&d.join("config.toml"), 0o666);
        assert!(d.read("config.toml").is_err());
        std::fs::remove_file(d.join("config.toml")).unwrap();
        let elsewhere = t.path().join("planted");
        std::fs::write(&elsewhere, "store = \"postgres://evil/x\"").unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.join("config.toml")).unwrap();
        assert!(d.read("config.toml").is_err(), "never through a link");
        // A FIFO would block an open: refused without waiting.
        nix::unistd::mkfifo(&d.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(d.read("fifo").is_err());
    }

    #[test]
    fn subdirs_are_private_and_not_links() {
        let t = tempfile::tempdir().unwrap();
        let d = DataDir::open_at(&t.path().join("d")).unwrap();
        let s = d.subdir("initialize").unwrap();
        assert_eq!(std::fs::metadata(&s).unwrap().mode() & 0o777, 0o700);
        assert_eq!(d.subdir("initialize").unwrap(), s, "idempotent");
        let other = t.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(&other, d.join("linked")).unwrap();
        assert!(d.subdir("linked").is_err());
    }
}
