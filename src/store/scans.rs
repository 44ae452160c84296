//! The last scan of each session file (see `sessions::scan`), so a growing
//! file is read only where it grew.

use crate::sessions::scan::Scan;
use anyhow::Result;
use std::path::Path;

pub trait Scans {
    fn scan_of(&self, path: &Path) -> Result<Option<Scan>>;

    fn save_scan(&self, path: &Path, scan: &Scan) -> Result<()>;

    /// The file's scan, carried on from the last one (and saved).
    fn scan(&self, path: &Path) -> Result<Scan> {
        let cached = self.scan_of(path)?;
        let scan = cached.clone().unwrap_or_default().resume(path)?;
        if cached.as_ref() != Some(&scan) {
            self.save_scan(path, &scan)?;
        }
        Ok(scan)
    }
}
