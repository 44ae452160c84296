//! `Scans` ([`crate::store::scans`]) in the SQLite file.

use super::local::Local;
use crate::sessions::scan::Scan;
use crate::store::scans::*;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};
use std::path::Path;

impl Scans for Local {
    fn scan_of(&self, path: &Path) -> Result<Option<Scan>> {
        let json: Option<String> = self
            .conn
            .prepare_cached("SELECT scan FROM scans WHERE path = ?1")?
            .query_row([path.to_string_lossy()], |r| r.get(0))
            .optional()?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    fn save_scan(&self, path: &Path, scan: &Scan) -> Result<()> {
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
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

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
