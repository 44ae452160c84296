//! Files replaced whole: written beside the target, then renamed over it, so
//! a reader sees the old file or the new one, never half of one.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Write `bytes` as `target` (created with `mode`), making its directory if
/// need be. No temporary file is left behind, whatever fails.
pub fn write(target: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir: PathBuf = target
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.claude-shim.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaced_whole_with_its_mode_and_nothing_left_beside() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("projects/-w/x.jsonl");
        write(&target, b"one\n", 0o600).unwrap();
        write(&target, b"two\n", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two\n");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x.jsonl"], "no temporary file left behind");
        // A target that cannot be replaced (a directory) leaves nothing either.
        let dir = t.path().join("projects/-w/d");
        std::fs::create_dir_all(dir.join("inside")).unwrap();
        assert!(write(&dir, b"x", 0o600).is_err());
        assert_eq!(
            std::fs::read_dir(target.parent().unwrap()).unwrap().count(),
            2
        );
    }
}
