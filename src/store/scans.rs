//! The last scan of each session file (see `sessions::scan`), so a growing
//! file is read only where it grew.

use super::Store;
use crate::sessions::scan::Scan;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};
use std::path::Path;

impl Store {
    pub fn scan_of(&self, path: &Path) -> Result<Option<Scan>> {
        if let Some(mut pg) = self.pg() {
            let json = pg.scan_of(&path.to_string_lossy())?;
            return Ok(json.and_then(|j| serde_json::from_str(&j).ok()));
        }
        let json: Option<String> = self
            .conn
            .prepare_cached("SELECT scan FROM scans WHERE path = ?1")?
            .query_row([path.to_string_lossy()], |r| r.get(0))
            .optional()?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// On a shared store, the turn will read `path`'s scan after its
    /// lease: it is read in the lease's round trip. Nothing on a local one.
    pub fn want_scan(&self, path: &Path) {
        if let Some(mut pg) = self.pg() {
            pg.want_scan(&path.to_string_lossy());
        }
    }

    pub fn save_scan(&self, path: &Path, scan: &Scan) -> Result<()> {
        if let Some(mut pg) = self.pg() {
            let json = serde_json::to_string(scan)?;
            return pg.save_scan(&path.to_string_lossy(), &json, self.now());
        }
        self.conn.execute(
            "INSERT INTO scans (path, scan, at) VALUES (?1, ?2, ?3)
             ON CONFLICT(path) DO UPDATE SET scan = excluded.scan, at = excluded.at",
            params![
                path.to_string_lossy(),
                serde_json::to_string(scan)?,
                self.now()
            ],
        )?;
        Ok(())
    }

    /// The file's scan, carried on from the last one (and saved).
    pub fn scan(&self, path: &Path) -> Result<Scan> {
        let cached = self.scan_of(path)?;
        let scan = cached.clone().unwrap_or_default().resume(path)?;
        if cached.as_ref() != Some(&scan) {
            self.save_scan(path, &scan)?;
        }
        Ok(scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_is_kept_and_carried_on() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        std::fs::write(&f, "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n").unwrap();
        let s = Store::in_memory().unwrap();
        assert_eq!(s.scan_of(&f).unwrap(), None);
        assert_eq!(s.scan(&f).unwrap().messages, 1);
        let mut text = std::fs::read_to_string(&f).unwrap();
        text.push_str("{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n");
        std::fs::write(&f, text).unwrap();
        let again = s.scan(&f).unwrap();
        assert_eq!((again.messages, again.compactions), (1, 1));
        assert_eq!(s.scan_of(&f).unwrap(), Some(again));
    }
}
