//! Finding the real `claude` behind the shim.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("cannot find the real claude: {0} ({var} names no executable)", var = crate::env::REAL)]
    BadOverride(String),
    #[error(
        "cannot find the real claude on PATH (only the shim itself); install Claude Code or set {}",
        crate::env::REAL
    )]
    NotFound,
    #[error("refusing to loop: {var} ({0}) is claude-shim itself; point it at the real claude", var = crate::env::REAL)]
    OverrideIsShim(String),
}

/// `CLAUDE_SHIM_REAL` wins; otherwise the first `claude` on PATH that is not
/// in the shim's own directory and does not resolve to this binary.
pub fn real_claude(shim_invoked_as: &Path) -> Result<PathBuf, LocateError> {
    let me = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    if let Some(path) = crate::env::real() {
        if me.is_some() && path.canonicalize().ok() == me {
            return Err(LocateError::OverrideIsShim(path.display().to_string()));
        }
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(LocateError::BadOverride(path.display().to_string()))
        };
    }
    let own_dir = shim_dir(shim_invoked_as);
    let path = crate::env::path();
    search(&path, own_dir.as_deref(), me.as_deref()).ok_or(LocateError::NotFound)
}

/// The directory the shim was started from, when argv[0] names one.
fn shim_dir(invoked_as: &Path) -> Option<PathBuf> {
    let dir = invoked_as.parent().filter(|d| !d.as_os_str().is_empty())?;
    dir.canonicalize().ok()
}

/// PATH alone, never the cwd: a caller whose working directory was deleted
/// still reaches the real claude (a relative PATH entry is looked up from
/// the cwd by the system, so it finds nothing then, as in a shell).
fn search(path: &OsString, skip_dir: Option<&Path>, me: Option<&Path>) -> Option<PathBuf> {
    let candidates = which::which_in_global("claude", Some(path)).ok()?;
    for candidate in candidates {
        let dir = candidate.parent().and_then(|d| d.canonicalize().ok());
        if skip_dir.is_some() && dir.as_deref() == skip_dir {
            continue;
        }
        let canonical = candidate.canonicalize().ok();
        if me.is_some() && canonical.as_deref() == me {
            continue;
        }
        return Some(candidate);
    }
    None
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn exe(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn skips_own_dir_and_links_to_self() {
        let t = tempfile::tempdir().unwrap();
        let (shim, other, real) = (t.path().join("s"), t.path().join("o"), t.path().join("r"));
        for d in [&shim, &other, &real] {
            std::fs::create_dir(d).unwrap();
        }
        let me = t.path().join("me");
        exe(&me);
        symlink(&me, shim.join("claude")).unwrap();
        symlink(&me, other.join("claude")).unwrap();
        exe(&real.join("claude"));
        let path = std::env::join_paths([&shim, &other, &real]).unwrap();
        let me = me.canonicalize().unwrap();
        let shim = shim.canonicalize().unwrap();
        let found = search(&path, Some(&shim), Some(&me)).unwrap();
        assert_eq!(found, real.join("claude"));
        let none = std::env::join_paths([&shim, &other]).unwrap();
        assert_eq!(search(&none, Some(&shim), Some(&me)), None);
    }
}
