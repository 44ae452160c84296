//! Transcripts that travel between hosts, in chunks: as `store::transcripts`.

use super::conn::{call, Pg, Typed};
use crate::store::types::transcripts::Chunk;
use anyhow::{bail, Result};

/// A session's transcript chunks, in order, without their bytes.
pub(super) const MANIFEST: &str =
    "SELECT start, len, sha256 FROM transcript_chunks WHERE session = $1 ORDER BY start";

pub(super) fn chunk_of(r: &tokio_postgres::Row) -> Chunk {
    Chunk {
        start: r.get::<_, i64>(0) as u64,
        len: r.get::<_, i64>(1) as u64,
        sha256: r.get(2),
    }
}

/// A chunk, inserted only where the stored transcript ends (two writers
/// racing for the same end collide on the key).
const APPEND: &str = "INSERT INTO transcript_chunks (session, start, len, sha256, data,
        uploaded_at, host)
     SELECT $1, $2, $3, $4, $5, $6, $7
     WHERE (SELECT COALESCE(MAX(start + len), 0) FROM transcript_chunks
            WHERE session = $1) = $2";

/// Rows of a transcript chunk at most this big.
const CHUNK_MAX: usize = 1 << 20;

impl Pg {
    /// A session's transcript chunks, in order, without their bytes.
    pub fn transcript_manifest(&mut self, session: &str) -> Result<Vec<Chunk>> {
        if let Some(known) = self.manifests.get(session) {
            return Ok(known.clone());
        }
        // Only a turn remembers (a few seconds, its session leased); the
        // keeper and management commands live long and read afresh.
        let remember = self.io.patience == super::conn::Patience::Turn;
        let rows = call!(self, "reading a transcript's chunks", |c| {
            c.q(MANIFEST, &[&session]).await
        })?;
        let chunks: Vec<Chunk> = rows.iter().map(chunk_of).collect();
        if remember {
            self.manifests.insert(session.to_owned(), chunks.clone());
        }
        Ok(chunks)
    }

    /// The chunks from byte `from` on (a chunk boundary), with their bytes.
    pub fn transcript_from(&mut self, session: &str, from: u64) -> Result<Vec<(Chunk, Vec<u8>)>> {
        let rows = call!(self, "downloading a transcript", |c| {
            c.q(
                "SELECT start, len, sha256, data FROM transcript_chunks
                 WHERE session = $1 AND start >= $2 ORDER BY start",
                &[&session, &(from as i64)],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    Chunk {
                        start: r.get::<_, i64>(0) as u64,
                        len: r.get::<_, i64>(1) as u64,
                        sha256: r.get(2),
                    },
                    r.get(3),
                )
            })
            .collect())
    }

    /// Append `data` at byte `start` of the session's transcript, which
    /// must be where the stored one ends (else another writer came first).
    pub fn append_transcript(
        &mut self,
        session: &str,
        start: u64,
        data: &[u8],
        now: i64,
    ) -> Result<()> {
        if self.io.patience == super::conn::Patience::Turn {
            self.defer_append(session, start, data, now);
            return Ok(());
        }
        let host = self.host.clone();
        // One statement a chunk: inserted only where the stored transcript
        // ends (two writers racing for the same end collide on the key).
        let mut at = start;
        for piece in data.chunks(CHUNK_MAX) {
            let sha = crate::store::types::transcripts::sha256(piece);
            let kept = sha.clone();
            let host = &host;
            let wrote = call!(self, "uploading a transcript", |c| {
                c.x(
                    APPEND,
                    &[
                        &session,
                        &(at as i64),
                        &(piece.len() as i64),
                        &sha,
                        &piece,
                        &now,
                        host,
                    ],
                )
                .await
            })?;
            if wrote == 0 {
                self.manifests.remove(session);
                let end = self
                    .transcript_manifest(session)?
                    .last()
                    .map_or(0, Chunk::end);
                bail!("the stored transcript of {session} ends at byte {end}, not {at}");
            }
            self.note_appended(session, at, piece.len() as u64, kept);
            at += piece.len() as u64;
        }
        Ok(())
    }

    /// A turn's upload, queued (see [`Pg::defer`]): it goes out with the
    /// next statement, the lease's release after it, in one round trip (the
    /// server runs them in order, so the lease goes after the upload). An
    /// append that finds the stored end elsewhere writes nothing, and says
    /// so in the log, as the direct call's failure would.
    fn defer_append(&mut self, session: &str, start: u64, data: &[u8], now: i64) {
        use super::conn::owned;
        let mut at = start;
        for piece in data.chunks(CHUNK_MAX) {
            let sha = crate::store::types::transcripts::sha256(piece);
            self.defer_expecting(
                "uploading a transcript",
                APPEND,
                vec![
                    owned(session.to_owned()),
                    owned(at as i64),
                    owned(piece.len() as i64),
                    owned(sha.clone()),
                    owned(piece.to_vec()),
                    owned(now),
                    owned(self.host.clone()),
                ],
                Some(1),
                format!("the stored transcript of {session} does not end at byte {at}"),
            );
            // Kept as if written: a stale entry fails the next append (it is
            // conditional), never misplaces it.
            self.note_appended(session, at, piece.len() as u64, sha);
            at += piece.len() as u64;
        }
    }

    /// The known chunk list of `session` after a chunk appended at `at`: it
    /// grows where it ended there, and is forgotten (read again when next
    /// needed) where it did not.
    fn note_appended(&mut self, session: &str, at: u64, len: u64, sha256: String) {
        match self.manifests.get_mut(session) {
            Some(known) if known.last().map_or(0, Chunk::end) == at => known.push(Chunk {
                start: at,
                len,
                sha256,
            }),
            _ => {
                self.manifests.remove(session);
            }
        }
    }
}
