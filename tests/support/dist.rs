//! `dist/`, the packages `.ci/package` builds: found at Cargo.toml's version,
//! or a panic that says to run `.ci/package` (for tests/e2e/packages.rs and
//! `cargo bench --bench launchers`).

use std::path::{Path, PathBuf};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The npm platform key of this machine (`npm/claude-shim/lib/platform.js`).
pub fn platform() -> String {
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let libc = if cfg!(target_os = "linux") {
        "-gnu"
    } else {
        ""
    };
    format!("{}-{cpu}{libc}", std::env::consts::OS)
}

/// The Rust target triple of this machine (the release workflow's names).
pub fn triple() -> String {
    let os = if cfg!(target_os = "macos") {
        "apple-darwin"
    } else {
        "unknown-linux-gnu"
    };
    format!("{}-{os}", std::env::consts::ARCH)
}

/// The packages in `dist/`.
pub struct Dist {
    /// The main npm package, then this machine's platform package.
    pub npm: [PathBuf; 2],
    pub wheel: PathBuf,
    pub sdist: PathBuf,
    /// The release asset cargo-binstall fetches.
    pub binstall: PathBuf,
}

/// `dist/` as `.ci/package` leaves it; panics with the command to run when
/// it is missing or holds another version.
pub fn dist() -> Dist {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist");
    let run_it = "run `.ci/package` (.ci/test runs it before the tests)";
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no packages: {} ({e}); {run_it}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let [main, plat, sdist, binstall] = [
        format!("claude-shim-{VERSION}.tgz"),
        format!("claude-shim-{}-{VERSION}.tgz", platform()),
        format!("claude_shim-{VERSION}.tar.gz"),
        format!("claude-shim-{}-v{VERSION}.tar.gz", triple()),
    ];
    let wheel_prefix = format!("claude_shim-{VERSION}-py3-none-");
    let wheel = names
        .iter()
        .find(|n| n.starts_with(&wheel_prefix) && n.ends_with(".whl"));
    let missing: Vec<&String> = [&main, &plat, &sdist, &binstall]
        .into_iter()
        .filter(|w| !names.contains(w))
        .collect();
    match wheel {
        Some(wheel) if missing.is_empty() => Dist {
            npm: [dir.join(main), dir.join(plat)],
            wheel: dir.join(wheel),
            sdist: dir.join(sdist),
            binstall: dir.join(binstall),
        },
        _ => panic!(
            "dist/ is missing or stale: Cargo.toml says {VERSION}, dist/ holds {names:?} \
             (missing {missing:?}{}); {run_it}",
            if wheel.is_none() { " and a wheel" } else { "" }
        ),
    }
}

/// A file starting with the ELF magic: a native binary, not a script.
pub fn is_elf(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x7fELF"))
}

/// How an ELF executable starts: at a fixed address (`ET_EXEC`, not a
/// position-independent `ET_DYN`), and whether it names a dynamic loader
/// (a `PT_INTERP` program header). 64-bit little-endian only.
pub struct Linking {
    pub fixed_address: bool,
    pub dynamic_loader: bool,
}

pub fn linking(path: &Path) -> Linking {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        b.starts_with(b"\x7fELF\x02\x01"),
        "{}: not a 64-bit LE ELF",
        path.display()
    );
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let dynamic_loader = (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) == 3 // PT_INTERP
    });
    Linking {
        fixed_address: u16_at(0x10) == 2, // ET_EXEC
        dynamic_loader,
    }
}
