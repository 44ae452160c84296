//! `claude-shim sessions` reads a 50 MB session file in constant memory: the
//! heap's peak while listing it is measured by a counting allocator (this binary's
//! global allocator), not timed. Its own binary: the allocator counts everything
//! the process does.

use claude_shim::cli::session_list::{gather, Which};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes at the peak of `f`, above what was live when it began.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst) - base)
}

const SESSION: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";

/// A session file of about `mb` MB shaped like the CLI's: per turn a user
/// message, attachments, an API request record and a two-block answer.
fn write_session(dir: &std::path::Path, mb: usize) -> (std::path::PathBuf, u64) {
    let project = dir.join("projects").join("-w");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join(format!("{SESSION}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let filler = "lorem ipsum dolor sit amet ".repeat(150);
    let mut turns = 0u64;
    let mut written = 0usize;
    while written < mb << 20 {
        turns += 1;
        let lines = [
            format!(
                r#"{{"type":"user","cwd":"/w","gitBranch":"main","version":"2.1.330","message":{{"role":"user","content":"question {turns}"}}}}"#
            ),
            format!(r#"{{"type":"attachment","attachment":{{"content":"{filler}"}}}}"#),
            format!(r#"{{"type":"api-request","body":"{filler}"}}"#),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m{turns}","model":"opus","content":[{{"type":"text","text":"{filler}"}}],"usage":{{"input_tokens":10,"output_tokens":2}}}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m{turns}","model":"opus","content":[{{"type":"tool_use","input":{{"x":"{filler}"}}}}],"usage":{{"input_tokens":10,"output_tokens":2}}}}}}"#
            ),
        ];
        for l in lines {
            written += l.len() + 1;
            writeln!(f, "{l}").unwrap();
        }
    }
    f.flush().unwrap();
    (path, turns)
}

#[test]
fn a_50_mb_session_file_is_listed_in_constant_memory() {
    let t = tempfile::tempdir().unwrap();
    let (path, turns) = write_session(t.path(), 50);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size >= 50 << 20);
    let which = Which::Dir("/w".into());

    let (rows, peak) = peak_of(|| gather(t.path(), &which, None, &[]));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r.title.as_deref(), Some("question 1"));
    assert_eq!(r.messages, 2 * turns, "a two-block answer is one message");
    assert_eq!((r.input_tokens, r.output_tokens), (10 * turns, 2 * turns));
    assert_eq!(r.file_size, Some(size));
    eprintln!(
        "listed a {:.1} MB session ({turns} turns) with a heap peak of {:.0} KiB",
        size as f64 / 1e6,
        peak as f64 / 1024.0
    );
    // Constant: a 64 KiB read buffer, one line, one parsed record — not the file.
    assert!(
        peak < 1 << 20,
        "heap peak {peak} bytes for a {size}-byte file"
    );

    // Through the store's cache: the first listing scans and saves, the next reads
    // the cache only; both stay small.
    let store_dir = t.path().join("shim");
    let store = claude_shim::store::Store::open_in(&store_dir).unwrap();
    let (first, peak_first) = peak_of(|| gather(t.path(), &which, Some(&store), &[]));
    let (again, peak_again) = peak_of(|| gather(t.path(), &which, Some(&store), &[]));
    assert_eq!(first, rows);
    assert_eq!(again, rows);
    assert!(peak_first < 1 << 20, "{peak_first}");
    assert!(peak_again < 1 << 20, "{peak_again}");
}
