//! The capability cache's key (see `store::caps`), shared by both backends.

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BinaryKey {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
}

impl BinaryKey {
    pub fn of(path: &std::path::Path) -> std::io::Result<BinaryKey> {
        use std::os::unix::fs::MetadataExt;
        let canonical = path.canonicalize()?;
        let meta = std::fs::metadata(&canonical)?;
        Ok(BinaryKey {
            path: canonical.to_string_lossy().into_owned(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        })
    }

    /// A short stable fingerprint for the identity scope.
    pub fn fingerprint(&self) -> String {
        format!("{}:{}:{}", self.path, self.size, self.mtime_ns)
    }
}
