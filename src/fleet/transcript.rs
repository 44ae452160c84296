//! A session file against its stored transcript (pure: [`compare`], and
//! the checks in [`verify`]), and the two effects: [`upload`] what this host
//! added, [`hydrate`] what it lacks.
//!
//! Session files are append-only, and the lease lets one host at a time
//! write a session in place, uploading before it lets go. So a host's copy
//! is the stored transcript, or a prefix of it (another host wrote since),
//! or the stored transcript plus what this host wrote and has not uploaded
//! yet. Anything else (a stale live process's closing records after
//! another host's turn) has diverged, and the stored one wins.

use crate::sessions;
use crate::store::transcripts::Fleet;
use crate::store::transcripts::{sha256, Chunk};
use anyhow::{bail, Context, Result};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// This host's copy against the stored transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// No file here.
    Missing,
    /// The same bytes.
    Same,
    /// A prefix of it: the stored bytes from `from` on are missing here.
    Behind {
        from: u64,
    },
    /// It and more: bytes from `from` on are not stored yet.
    Ahead {
        from: u64,
    },
    Diverged,
}

/// Compare a local file of `len` bytes (`None`: none) with the stored
/// chunks. `matches(chunk)` says whether the local bytes at the chunk's
/// range hash as stored; only the chunk at the boundary is checked (the
/// file is append-only), so this reads at most one chunk of the file.
pub fn compare(len: Option<u64>, stored: &[Chunk], matches: impl Fn(&Chunk) -> bool) -> Local {
    let Some(len) = len else {
        return Local::Missing;
    };
    let end = stored.last().map_or(0, Chunk::end);
    let boundary = |at: u64| at == 0 || stored.iter().any(|c| c.end() == at && matches(c));
    if len == end {
        return if boundary(end) {
            Local::Same
        } else {
            Local::Diverged
        };
    }
    if len < end {
        return if boundary(len) {
            Local::Behind { from: len }
        } else {
            Local::Diverged
        };
    }
    if boundary(end) {
        Local::Ahead { from: end }
    } else {
        Local::Diverged
    }
}

/// Chunks as stored are contiguous from `from` and each hashes as stored.
pub fn verify(from: u64, chunks: &[(Chunk, Vec<u8>)]) -> Result<()> {
    let mut at = from;
    for (c, data) in chunks {
        if c.start != at || c.len != data.len() as u64 {
            bail!("stored chunks are not contiguous at byte {at}");
        }
        if sha256(data) != c.sha256 {
            bail!("stored chunk at byte {} fails its checksum", c.start);
        }
        at = c.end();
    }
    Ok(())
}

/// The directory Claude Code keeps a cwd's sessions in: the absolute cwd
/// with every character but ASCII letters and digits turned into `-`.
pub fn project_slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The local file of `session`, and its state against the store.
fn local_state(
    store: &dyn Fleet,
    file: Option<&Path>,
    session: &str,
) -> Result<(Local, Vec<Chunk>)> {
    let stored = store.transcript_manifest(session)?;
    let len = file
        .and_then(|f| std::fs::metadata(f).ok())
        .map(|m| m.len());
    let state = compare(len, &stored, |c| {
        file.and_then(|f| read_range(f, c.start, c.len).ok())
            .is_some_and(|b| sha256(&b) == c.sha256)
    });
    Ok((state, stored))
}

fn read_range(path: &Path, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// What [`upload`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uploaded {
    Nothing,
    Bytes(u64),
}

/// Store what this host's copy of `session` has that the store has not:
/// from where the stored transcript ends to the file's last full line (a
/// live process may be writing the next).
pub fn upload(store: &dyn Fleet, config_dir: &Path, session: &str) -> Result<Uploaded> {
    let Some(file) = sessions::find(config_dir, session) else {
        return Ok(Uploaded::Nothing);
    };
    let (state, _) = local_state(store, Some(&file), session)?;
    let from = match state {
        Local::Same | Local::Missing => return Ok(Uploaded::Nothing),
        Local::Ahead { from } => from,
        Local::Behind { .. } | Local::Diverged => {
            bail!("this host's copy of {session} differs from the stored transcript: not uploaded")
        }
    };
    let len = std::fs::metadata(&file)?.len();
    let mut bytes = read_range(&file, from, len - from)?;
    match memchr::memrchr(b'\n', &bytes) {
        Some(nl) => bytes.truncate(nl + 1),
        None => return Ok(Uploaded::Nothing),
    }
    store.append_transcript(session, from, &bytes)?;
    Ok(Uploaded::Bytes(bytes.len() as u64))
}

/// What [`hydrate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hydrated {
    /// The file here was already the stored one (or more).
    Here,
    /// Nothing stored for this session: the file here, if any, is all there is.
    NotStored,
    /// Written from the store (bytes added to what was here).
    Written { bytes: u64 },
    /// The file here is left as it was and may not be resumed (why).
    Refused(String),
}

/// The uuid a hydrated file must hold: the last main-thread assistant
/// record (`Head`, for an in-place resume), or anywhere (`Contains`, for a
/// branch at an earlier turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect<'a> {
    Head(&'a str),
    Contains(&'a str),
    Nothing,
}

/// Make this host's copy of `session` the stored transcript: write what it
/// lacks (into `<config>/projects/<slug of cwd>/<id>.jsonl` when there is
/// no file), verified chunk by chunk and then as a whole (`expect`), and
/// put in place atomically. A diverged copy is replaced only when
/// `may_replace` (the caller holds the session's lease); then, before
/// anything is written, `quiet_writers` ends what else here may write the
/// file (a live CLI of the session), and the copy is looked at again.
pub fn hydrate(
    store: &dyn Fleet,
    config_dir: &Path,
    cwd: &str,
    session: &str,
    expect: Expect<'_>,
    may_replace: bool,
    quiet_writers: impl FnOnce(),
) -> Result<Hydrated> {
    if !sessions::valid_id(session) {
        bail!("not a session id: {session:?}");
    }
    let mut file = sessions::find(config_dir, session);
    let (mut state, stored) = local_state(store, file.as_deref(), session)?;
    if stored.is_empty() {
        return Ok(Hydrated::NotStored);
    }
    if may_replace && !matches!(state, Local::Same | Local::Ahead { .. }) {
        quiet_writers();
        file = sessions::find(config_dir, session);
        state = local_state(store, file.as_deref(), session)?.0;
    }
    let keep = match state {
        Local::Same | Local::Ahead { .. } => return Ok(Hydrated::Here),
        Local::Behind { from } => from,
        Local::Missing => 0,
        Local::Diverged if may_replace => 0,
        Local::Diverged => {
            return Ok(Hydrated::Refused(
                "this host's copy differs from the stored transcript".into(),
            ))
        }
    };
    let chunks = store.transcript_from(session, keep)?;
    if let Err(e) = verify(keep, &chunks) {
        return Ok(Hydrated::Refused(format!("{e:#}")));
    }
    let mut bytes = match (&file, keep) {
        (Some(f), k) if k > 0 => read_range(f, 0, k)?,
        _ => Vec::new(),
    };
    let added: u64 = chunks.iter().map(|(c, _)| c.len).sum();
    for (_, data) in &chunks {
        bytes.extend_from_slice(data);
    }
    if let Err(why) = check_expect(&bytes, expect) {
        return Ok(Hydrated::Refused(why));
    }
    let target = match file {
        Some(f) => f,
        None => config_dir
            .join("projects")
            .join(project_slug(cwd))
            .join(format!("{session}.jsonl")),
    };
    crate::whole_file::write(&target, &bytes, 0o600)
        .with_context(|| format!("writing {}", target.display()))?;
    Ok(Hydrated::Written { bytes: added })
}

fn check_expect(bytes: &[u8], expect: Expect<'_>) -> Result<(), String> {
    let found = match expect {
        Expect::Nothing => return Ok(()),
        Expect::Head(uuid) => sessions::last_assistant_uuid_in(bytes).as_deref() == Some(uuid),
        Expect::Contains(uuid) => sessions::has_assistant_uuid(bytes, uuid),
    };
    match (found, expect) {
        (true, _) => Ok(()),
        (false, Expect::Head(u)) => Err(format!("the stored transcript does not end at {u}")),
        (false, _) => Err("the stored transcript does not hold the pinned turn".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&[u8]]) -> (Vec<Chunk>, Vec<u8>) {
        let mut at = 0;
        let mut all = Vec::new();
        let mut out = Vec::new();
        for p in parts {
            out.push(Chunk {
                start: at,
                len: p.len() as u64,
                sha256: sha256(p),
            });
            at += p.len() as u64;
            all.extend_from_slice(p);
        }
        (out, all)
    }

    #[test]
    fn a_local_copy_is_the_stored_one_a_prefix_more_or_diverged() {
        let (stored, all) = chunks(&[b"a\n", b"bb\n", b"ccc\n"]);
        let local = |bytes: &[u8]| {
            let bytes = bytes.to_vec();
            compare(Some(bytes.len() as u64), &stored, move |c| {
                bytes
                    .get(c.start as usize..c.end() as usize)
                    .is_some_and(|b| sha256(b) == c.sha256)
            })
        };
        assert_eq!(local(&all), Local::Same);
        assert_eq!(local(b"a\nbb\n"), Local::Behind { from: 5 });
        assert_eq!(local(b""), Local::Behind { from: 0 });
        assert_eq!(
            local(&[all.as_slice(), b"dd\n"].concat()),
            Local::Ahead { from: 9 }
        );
        // Same length, other bytes; a length inside a chunk; other bytes then more.
        assert_eq!(local(b"a\nbb\nCCC\n"), Local::Diverged);
        assert_eq!(local(b"a\nb"), Local::Diverged);
        assert_eq!(local(b"a\nbb\nCCC\nmore\n"), Local::Diverged);
        // Only the boundary chunk is read (files are append-only).
        assert_eq!(local(b"a\nBB\nccc\nmore\n"), Local::Ahead { from: 9 });
        assert_eq!(compare(None, &stored, |_| true), Local::Missing);
        // Nothing stored: any file here is ahead.
        assert_eq!(compare(Some(4), &[], |_| true), Local::Ahead { from: 0 });
        assert_eq!(compare(Some(0), &[], |_| true), Local::Same);
    }

    #[test]
    fn verification_wants_contiguous_chunks_that_hash_as_stored() {
        let (stored, _) = chunks(&[b"a\n", b"bb\n"]);
        let good = vec![
            (stored[0].clone(), b"a\n".to_vec()),
            (stored[1].clone(), b"bb\n".to_vec()),
        ];
        assert!(verify(0, &good).is_ok());
        assert!(verify(2, &good[1..]).is_ok());
        assert!(verify(0, &good[1..]).is_err(), "a gap");
        let mut bad = good.clone();
        bad[1].1 = b"BB\n".to_vec();
        assert!(verify(0, &bad).is_err(), "a checksum");
    }

    #[test]
    fn a_hydrated_file_must_end_at_or_hold_the_pinned_turn() {
        let file = concat!(
            r#"{"type":"user","uuid":"u1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1"}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","parentUuid":"a1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a2"}"#,
            "\n",
        )
        .as_bytes();
        assert!(check_expect(file, Expect::Head("a2")).is_ok());
        assert!(check_expect(file, Expect::Head("a1")).is_err());
        assert!(check_expect(file, Expect::Contains("a1")).is_ok());
        assert!(
            check_expect(file, Expect::Contains("u2")).is_err(),
            "not an assistant"
        );
        assert!(check_expect(file, Expect::Contains("a9")).is_err());
        assert!(check_expect(b"", Expect::Nothing).is_ok());
    }

    #[test]
    fn slugs_as_claude_code_makes_them() {
        assert_eq!(project_slug("/home/me/my.app_1"), "-home-me-my-app-1");
    }
}
