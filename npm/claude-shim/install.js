'use strict';
// postinstall: put the native binary where npm links `claude-shim`
// (bin/claude-shim, the Node launcher), so that `claude-shim` on PATH starts
// without Node (esbuild does the same). Only on npm for Unix, whose bin link
// is a symlink to that file: yarn, pnpm and bun write wrapper scripts that
// may run the file with `node`, so there the launcher stays. Any failure
// leaves the launcher in place (it works, only slower) and never fails the
// install. `claude` is native either way: `claude-shim install` links it to
// the binary itself.

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { binaryPath } = require('./lib/platform.js');

// Why the launcher stays, or null when the binary took its place.
function optimize() {
  if (process.platform === 'win32') return 'Windows';
  const agent = process.env.npm_config_user_agent || '';
  if (!agent.startsWith('npm/')) {
    return `installed by ${agent.split(' ')[0] || 'an unknown package manager'}, not npm`;
  }
  const bin = binaryPath();
  const want = `claude-shim ${require('./package.json').version}`;
  const said = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 30000 }).trim();
  if (said !== want) return `${bin} --version says "${said}", not "${want}"`;

  // A hard link costs no space; a copy where the two sit on different file
  // systems. Made beside the launcher and renamed over it, so the path npm
  // linked never lacks a working `claude-shim`.
  const launcher = path.join(__dirname, 'bin', 'claude-shim');
  const tmp = path.join(__dirname, 'bin', `.claude-shim.${process.pid}`);
  fs.rmSync(tmp, { force: true });
  try {
    fs.linkSync(bin, tmp);
  } catch (_) {
    fs.copyFileSync(bin, tmp);
    fs.chmodSync(tmp, 0o755);
  }
  fs.renameSync(tmp, launcher);
  return null;
}

try {
  const why = optimize();
  if (why) process.stderr.write(`claude-shim: kept the Node launcher for claude-shim (${why})\n`);
} catch (err) {
  process.stderr.write(`claude-shim: kept the Node launcher for claude-shim: ${err.message}\n`);
}
