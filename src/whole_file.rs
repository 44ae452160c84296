//! Files replaced whole: written beside the target, then renamed over it, so
//! a reader sees the old file or the new one, never half of one. The file
//! beside is created exclusively (`O_CREAT|O_EXCL`, by the `tempfile`
//! crate): a name or link planted there is never written through.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Write `bytes` as `target` (created with `mode`), making its directory if
/// need be. No temporary file is left behind, whatever fails.
pub fn write(target: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Removed if anything below fails (its Drop).
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".claude-shim")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    tmp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

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

    #[test]
    fn never_writes_through_a_planted_link() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let dir = t.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        // The temporary names of old (`.<name>.claude-shim.<pid>`), planted
        // as links to the victim's file.
        for pid in [std::process::id(), 1, 2] {
            let planted = dir.join(format!(".a.json.claude-shim.{pid}"));
            std::os::unix::fs::symlink(&victim, planted).unwrap();
        }
        write(&dir.join("a.json"), b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"mine");
        assert_eq!(std::fs::read(dir.join("a.json")).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(dir.join("a.json")).unwrap().mode() & 0o777,
            0o600
        );
    }
}
