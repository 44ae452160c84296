//! File systems a test mounts (as root, as CI runs): a directory bound onto
//! itself read-only, or a small tmpfs. A [`Mounted`] is unmounted when it is
//! dropped, a failing test's too (the panic unwinds through it), so no
//! read-only mount or tmpfs outlives the test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mount point, unmounted on drop.
pub struct Mounted(PathBuf);

impl Mounted {
    /// `dir` bound onto itself, then remounted read-only.
    pub fn read_only(dir: &Path) -> Mounted {
        mount(&["--bind", s(dir), s(dir)]);
        let m = Mounted(dir.to_path_buf());
        mount(&["-o", "remount,ro,bind", s(dir)]);
        m
    }

    /// A tmpfs of `size` (as `mount -o size=` takes it: `256k`) at `dir`
    /// (created).
    pub fn tmpfs(dir: &Path, size: &str) -> Mounted {
        std::fs::create_dir_all(dir).expect("mkdir the mount point");
        mount(&[
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size}"),
            "tmpfs",
            s(dir),
        ]);
        Mounted(dir.to_path_buf())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Lazily if something still has it open (a process the test left).
        let gone = Command::new("umount").arg(&self.0).status();
        if !gone.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 mount point")
}

/// `mount ARGS`; panics (never skips) when it fails: these tests need root
/// and a kernel that lets it mount (CI runs them as root).
#[track_caller]
fn mount(args: &[&str]) {
    let out = Command::new("mount")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run mount: {e}"));
    assert!(
        out.status.success(),
        "mount {args:?} failed ({}): {}; these tests need root (CI runs them as root)",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// Fill the file system holding `dir` to the last block with a file there.
pub fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).expect("create the filler");
    let block = [0u8; 4096];
    loop {
        if f.write_all(&block).is_err() {
            break;
        }
    }
    // What a block could not take, a byte may.
    while f.write_all(&[0]).is_ok() {}
}
