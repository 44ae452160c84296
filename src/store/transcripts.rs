//! What only a store the replicas of a fleet share can do ([`Fleet`]):
//! session transcripts, a session file's bytes as chunks `(start, len,
//! sha256)` appended by the turn that wrote them, so a turn landing on
//! another host can rebuild the file there (see `crate::fleet::transcript`);
//! and a turn's lookup in one round trip. On one machine the file itself is
//! the transcript, and a round trip costs microseconds: a local store has
//! none of this (`Engine::fleet` is `None`).

pub use super::types::pins::Lease;
pub use super::types::transcripts::{sha256, Chunk};
use anyhow::Result;
use std::path::Path;

pub trait Fleet {
    /// The session's stored chunks, in order, without their bytes.
    fn transcript_manifest(&self, session: &str) -> Result<Vec<Chunk>>;

    /// The stored chunks from byte `from` on, with their bytes.
    fn transcript_from(&self, session: &str, from: u64) -> Result<Vec<(Chunk, Vec<u8>)>>;

    /// Append bytes at `start`, which must be where the stored transcript
    /// ends.
    fn append_transcript(&self, session: &str, start: u64, data: &[u8]) -> Result<()>;

    /// The session's head, and its lease taken when that head is `head`
    /// (`None`: not tried), in one round trip.
    fn head_and_lease(
        &self,
        session: &str,
        head: Option<&str>,
    ) -> Result<(Option<String>, Option<Lease>)>;

    /// The turn will read `path`'s scan after its lease: it is read in the
    /// lease's round trip.
    fn want_scan(&self, path: &Path);
}
