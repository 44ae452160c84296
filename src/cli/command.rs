//! What a subcommand is: a [`Run`], whose error may be a [`Failed`]
//! verdict, one the exit status carries even when stdout was closed early.

use anyhow::Result;
use std::io::Write;

/// One subcommand. Output goes to `out` (stdout, or a buffer in tests);
/// an error is printed as `claude-shim: <error>` and exits 1.
pub trait Run {
    fn run(&self, out: &mut dyn Write) -> Result<()>;
}

/// A command's verdict that the exit status carries even when stdout was
/// closed early: `doctor` found problems.
#[derive(Debug)]
pub struct Failed(pub String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failed {}
