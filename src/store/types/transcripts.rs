//! A transcript's pieces (see `store::transcripts`); only the shared
//! backend keeps them.

/// One stored piece of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub len: u64,
    /// Hex SHA-256 of the chunk's bytes.
    pub sha256: String,
}

impl Chunk {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
