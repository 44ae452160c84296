//! Session transcripts in the shared store: a session file's bytes as
//! chunks `(start, len, sha256)`, appended by the turn that wrote them, so
//! a turn landing on another host can rebuild the file there (see
//! `crate::fleet::transcript`). Only a shared (PostgreSQL) store has them:
//! on one machine the file itself is the transcript.

pub use super::types::transcripts::{sha256, Chunk};
use super::Store;
use anyhow::{bail, Result};

impl Store {
    /// The session's stored chunks, in order, without their bytes.
    pub fn transcript_manifest(&self, session: &str) -> Result<Vec<Chunk>> {
        match self.pg() {
            Some(mut pg) => pg.transcript_manifest(session),
            None => not_shared(),
        }
    }

    /// The stored chunks from byte `from` on, with their bytes.
    pub fn transcript_from(&self, session: &str, from: u64) -> Result<Vec<(Chunk, Vec<u8>)>> {
        match self.pg() {
            Some(mut pg) => pg.transcript_from(session, from),
            None => not_shared(),
        }
    }

    /// Append bytes at `start`, which must be where the stored transcript
    /// ends.
    pub fn append_transcript(&self, session: &str, start: u64, data: &[u8]) -> Result<()> {
        let now = self.now();
        match self.pg() {
            Some(mut pg) => pg.append_transcript(session, start, data, now),
            None => not_shared(),
        }
    }
}

fn not_shared<T>() -> Result<T> {
    bail!("transcripts travel only through a shared (PostgreSQL) store")
}
