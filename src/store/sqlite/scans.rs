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
