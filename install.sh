#!/usr/bin/env bash
# Installs claude-shim from this checkout with `cargo install`, built as the
# packages build it (.ci/package): on Linux with glibc, linked statically and
# at a fixed address (crt-static, relocation-model=static). No dynamic loader
# runs at start, so passing a call through costs about half what the plain
# `cargo install` build adds (docs/performance.md). Needs nothing beyond the
# host's own Rust target and a C library that links statically (Debian's
# libc6-dev, which a C compiler brings).
#
# Elsewhere it runs the plain `cargo install --locked --path .`, and says why:
# macOS (Apple supports no static executables), musl (Rust links it statically
# already), a glibc without its static archives (libc.a), or a static build
# that failed. The binary works the same either way.
#
# The static build's safeguard is compiled in: a static glibc cannot load NSS
# modules, so its name lookups keep to the services linked in
# (src/store/postgres/nss.rs, keyed on target_feature = "crt-static").
#
#   ./install.sh [ARGS…]    ARGS go to `cargo install` (e.g. --root DIR)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

say() { printf 'install.sh: %s\n' "$*" >&2; }

command -v cargo >/dev/null 2>&1 || { say "cargo not found: install Rust (https://rustup.rs)"; exit 1; }

# `plain WHY ARGS…`: the plain build, after saying why.
plain() {
    say "$1: the plain build instead (cargo install --locked --path .)"
    shift
    cargo install --locked --path . "$@"
    exit
}

host=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
case "$host" in
*-linux-gnu*) ;;
*-apple-darwin) plain "macOS has no static executables" "$@" ;;
*-linux-musl*) plain "musl: Rust links it statically already" "$@" ;;
'') plain "rustc did not name its host" "$@" ;;
*) plain "$host: no static build known here" "$@" ;;
esac

# The linker rustc uses must find glibc's static archives: a second's check
# here, rather than a failure at the last step of a build of minutes.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
linker=${CC:-cc}
if ! printf 'int main(void) { return 0; }\n' >"$probe/p.c" ||
    ! "$linker" -static -o "$probe/p" "$probe/p.c" -lpthread -lm -ldl -lrt -lutil >/dev/null 2>&1 ||
    ! "$probe/p"; then
    plain "$linker cannot link a static program (Debian: apt-get install libc6-dev)" "$@"
fi

# rustc takes crt-static only with an explicit --target (build scripts and
# proc-macros, built for the host without it, stay dynamic); the host's own
# target needs no download.
say "static build for $host (as the packages ship it)"
if RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static -C relocation-model=static" \
    cargo install --locked --path . --target "$host" "$@"; then
    exit 0
fi
plain "the static build failed" "$@"
