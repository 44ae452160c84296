'use strict';
// Which platform package carries the native claude-shim for this machine,
// and where its binary is. Shared by the launcher (bin/claude-shim), the
// postinstall (install.js) and the packaging script (npm/stage.js), so the
// list of platforms is written once.

const fs = require('fs');
const path = require('path');

const SCOPE = '@claude-shim';

// Key: `${process.platform}-${process.arch}` plus `-gnu` for Linux (a musl
// build would be `-musl`, none yet). `target`: the Rust target triple the
// release workflow builds it for. `libc`: npm's field of the same name, so
// npm skips a glibc package on a musl system.
const PLATFORMS = {
  'linux-x64-gnu': { os: 'linux', cpu: 'x64', libc: 'glibc', target: 'x86_64-unknown-linux-gnu' },
  'linux-arm64-gnu': { os: 'linux', cpu: 'arm64', libc: 'glibc', target: 'aarch64-unknown-linux-gnu' },
  'darwin-arm64': { os: 'darwin', cpu: 'arm64', target: 'aarch64-apple-darwin' },
  'darwin-x64': { os: 'darwin', cpu: 'x64', target: 'x86_64-apple-darwin' },
};

function packageName(key) {
  return `${SCOPE}/${key}`;
}

// Whether this Linux runs on musl (Alpine): Node's report has no glibc
// version there. Only asked to explain a missing package, never per call.
function isMusl() {
  const report = process.report && process.report.getReport ? process.report.getReport() : null;
  const header = report && (typeof report === 'string' ? JSON.parse(report).header : report.header);
  return Boolean(header) && header.glibcVersionRuntime === undefined;
}

function platformKey() {
  const base = `${process.platform}-${process.arch}`;
  return process.platform === 'linux' ? `${base}-gnu` : base;
}

// Why this machine has no binary, and what to do instead.
function unsupported(key) {
  if (process.platform === 'win32') {
    return 'Windows is not supported: the shim relies on Unix process control (exec, signals). ' +
      'Use it inside WSL, where the Linux package installs.';
  }
  if (process.platform === 'linux' && isMusl()) {
    return `no package is built for musl Linux (${process.arch}) yet; ` +
      'install from source with Rust: cargo install --locked claude-shim';
  }
  return `no package is built for ${key} yet; ` +
    'install from source with Rust: cargo install --locked claude-shim';
}

// The native binary of the installed platform package, or an Error that
// says what is wrong and what to do.
function binaryPath() {
  const key = platformKey();
  if (!PLATFORMS[key]) {
    throw new Error(unsupported(key));
  }
  const name = packageName(key);
  let dir;
  try {
    dir = path.dirname(require.resolve(`${name}/package.json`));
  } catch (_) {
    const version = require('../package.json').version;
    throw new Error(
      `${name} is not installed. npm installs it with claude-shim as an optional ` +
      'dependency; it is missing after an install with --omit=optional (or --no-optional). ' +
      `Reinstall claude-shim without that flag, or add it: npm install -g ${name}@${version}`,
    );
  }
  const bin = path.join(dir, 'bin', 'claude-shim');
  if (!fs.existsSync(bin)) {
    throw new Error(`${bin} is missing: reinstall claude-shim`);
  }
  return bin;
}

module.exports = { PLATFORMS, SCOPE, packageName, platformKey, binaryPath };
