'use strict';
// Lays out the npm packages of claude-shim for `npm pack` (.ci/package calls
// it; the release workflow too):
//
//   node npm/stage.js --out DIR --version V --main
//       DIR/claude-shim: the main package (launcher, postinstall, and an
//       optional dependency on every platform package of lib/platform.js)
//   node npm/stage.js --out DIR --version V --target TRIPLE --binary PATH
//       DIR/<platform>: the platform package carrying that native binary
//   --repository URL (Cargo.toml's) goes into both, as npm's provenance wants
//   node npm/stage.js --platform-of TRIPLE
//       prints the platform key of a Rust target triple
//
// The platform list is lib/platform.js's, so the launcher, the postinstall
// and the packages cannot disagree on names.

const fs = require('fs');
const path = require('path');
const { PLATFORMS, packageName } = require('./claude-shim/lib/platform.js');

const SRC = path.join(__dirname, 'claude-shim');
const LICENSE = 'MIT';
const DESCRIPTION =
  'A drop-in `claude` that resumes the Claude Code session a replayed conversation already lives in';
const LABEL = { linux: 'Linux', darwin: 'macOS' };

function args(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    const takesValue = !['main'].includes(key);
    out[key] = takesValue ? argv[++i] : true;
    if (takesValue && out[key] === undefined) fail(`--${key} needs a value`);
  }
  return out;
}

function fail(message) {
  process.stderr.write(`npm/stage.js: ${message}\n`);
  process.exit(2);
}

function keyOf(triple) {
  const key = Object.keys(PLATFORMS).find((k) => PLATFORMS[k].target === triple);
  if (!key) {
    const known = Object.values(PLATFORMS).map((p) => p.target).join(', ');
    fail(`no npm platform package for ${triple} (known: ${known})`);
  }
  return key;
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function fresh(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// `repository`, when Cargo.toml names one.
function repository(url) {
  return url ? { repository: { type: 'git', url: `git+${url.replace(/\.git$/, '')}.git` } } : {};
}

function stageMain(out, version, repo) {
  const dir = fresh(path.join(out, 'claude-shim'));
  for (const file of ['bin/claude-shim', 'lib/platform.js', 'install.js', 'README.md']) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(SRC, file), path.join(dir, file));
  }
  fs.chmodSync(path.join(dir, 'bin/claude-shim'), 0o755);
  const optional = {};
  for (const key of Object.keys(PLATFORMS)) optional[packageName(key)] = version;
  writeJson(path.join(dir, 'package.json'), {
    name: 'claude-shim',
    version,
    description: DESCRIPTION,
    license: LICENSE,
    ...repository(repo),
    keywords: ['claude', 'claude-code', 'cli', 'shim'],
    // Windows is not supported (README): npm says so at install time.
    os: ['darwin', 'linux'],
    engines: { node: '>=16' },
    bin: { 'claude-shim': 'bin/claude-shim' },
    scripts: { postinstall: 'node install.js' },
    optionalDependencies: optional,
    files: ['bin/claude-shim', 'lib/platform.js', 'install.js', 'README.md'],
  });
  return dir;
}

function stagePlatform(out, version, triple, binary, repo) {
  const key = keyOf(triple);
  const p = PLATFORMS[key];
  if (!fs.existsSync(binary)) fail(`${binary} does not exist`);
  const dir = fresh(path.join(out, key));
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(binary, path.join(dir, 'bin/claude-shim'));
  fs.chmodSync(path.join(dir, 'bin/claude-shim'), 0o755);
  const what = `${LABEL[p.os]} ${p.cpu}${p.libc ? ` (${p.libc})` : ''}`;
  const manifest = {
    name: packageName(key),
    version,
    description: `The native claude-shim binary for ${what}; install \`claude-shim\`, which picks it`,
    license: LICENSE,
    ...repository(repo),
    os: [p.os],
    cpu: [p.cpu],
  };
  if (p.libc) manifest.libc = [p.libc];
  Object.assign(manifest, {
    files: ['bin/claude-shim'],
    // Yarn Plug'n'Play: keep the binary on disk, where it can be executed.
    preferUnplugged: true,
    publishConfig: { access: 'public' },
  });
  writeJson(path.join(dir, 'package.json'), manifest);
  fs.writeFileSync(
    path.join(dir, 'README.md'),
    `# ${packageName(key)}\n\nThe native \`claude-shim\` binary for ${what} (Rust target ` +
      `\`${triple}\`).\nDo not install it directly: \`npm install -g claude-shim\` picks the ` +
      'package for your platform.\n',
  );
  return dir;
}

const a = args(process.argv.slice(2));
if (a['platform-of']) {
  process.stdout.write(`${keyOf(a['platform-of'])}\n`);
  process.exit(0);
}
if (!a.out || !a.version) fail('usage: see the header of npm/stage.js');
if (!a.main && !a.target) fail('nothing to stage: give --main and/or --target TRIPLE --binary PATH');
if (a.main) process.stdout.write(`${stageMain(a.out, a.version, a.repository)}\n`);
if (a.target) {
  if (!a.binary) fail('--target needs --binary');
  process.stdout.write(`${stagePlatform(a.out, a.version, a.target, a.binary, a.repository)}\n`);
}
