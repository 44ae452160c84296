//! One binary, two faces: invoked as `claude` (a link in the shim directory)
//! it is the shim; invoked as `claude-shim` it is the management CLI.

use std::ffi::OsString;
use std::path::Path;

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = args.first().cloned().unwrap_or_default();
    let name = Path::new(&argv0).file_name().unwrap_or_default();
    if name.to_string_lossy().starts_with("claude-shim") {
        claude_shim::cli::main(args)
    } else {
        claude_shim::shim::main(Path::new(&argv0), args.into_iter().skip(1).collect())
    }
}
