// The OCI images `make images` writes (scripts/build-images.sh: umoci, no Docker): each image's
// config (entrypoint, non-root user, port, labels), and each image's entrypoint run from its
// unpacked root filesystem — chrooted, as uid 65532, with the image's working directory — starting
// and answering its health endpoint. No shell and no package manager are in the images.
// Builds the images first when the layout is missing (minutes: tsc, vite, npm install --omit=dev).
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../core/free-port.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { until } from '../helpers/until.ts';

const run = promisify(execFile);
const repo = new URL('../../', import.meta.url).pathname;
const layout = process.env.IMAGES_OUT ?? join(repo, 'dist', 'images', 'oci');
const SERVICES = ['proxy', 'operator', 'console', 'simulator'] as const;
type Service = (typeof SERVICES)[number];

interface ImageConfig {
  config: {
    User: string;
    Entrypoint: string[];
    WorkingDir: string;
    ExposedPorts: Record<string, object>;
    Labels: Record<string, string>;
    Env: string[];
  };
  rootfs: { diff_ids: string[] };
}

const blob = (digest: string) => readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8');

function configOf(tag: Service): ImageConfig {
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!entry) throw new Error(`no image tagged ${tag} in ${layout}`);
  const manifest = JSON.parse(blob(entry.digest)) as { config: { digest: string } };
  return JSON.parse(blob(manifest.config.digest)) as ImageConfig;
}

/**
 * The environment `make images` builds in: the test's own, without what vitest adds — its
 * NODE_ENV=test would make the second build's web bundle (Vite) differ from the first's.
 */
function buildEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_ENV;
  return env;
}

let redis: TestRedis;
const work = mkdtempSync(join(tmpdir(), 'mp-images-'));

beforeAll(async () => {
  // Asynchronous: a build of minutes must not block the test worker's event loop.
  if (!existsSync(join(layout, 'index.json')))
    await run(join(repo, 'scripts', 'build-images.sh'), [], {
      env: buildEnv({ IMAGES_OUT: layout }),
      maxBuffer: 64 << 20,
    });
  redis = await startRedis();
}, 1_200_000);
afterAll(async () => {
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('image configs', () => {
  it.each(SERVICES)('%s: node entrypoint, non-root user, its port, source and version labels', (name) => {
    const { config } = configOf(name);
    const port = { proxy: 8080, operator: 9090, console: 3000, simulator: 9000 }[name];
    expect(config.User).toBe('65532:65532');
    expect(config.Entrypoint[0]).toBe('/usr/bin/node');
    expect(config.Entrypoint).toContain('--max-semi-space-size=64');
    expect(Object.keys(config.ExposedPorts)).toEqual([`${port}/tcp`]);
    expect(config.WorkingDir).toBe('/app');
    const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect(config.Labels['org.opencontainers.image.version']).toBe(version);
    expect(config.Labels['org.opencontainers.image.source']).toMatch(/^https:\/\//);
    expect(config.Labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}$|^unknown$/);
  });

  it('the four images share their three layers (runtime, dependencies, application)', () => {
    const layers = SERVICES.map((s) => configOf(s).rootfs.diff_ids);
    expect(layers[0]).toHaveLength(3);
    for (const l of layers) expect(l).toEqual(layers[0]);
  });
});

/** Unpacks one image's root filesystem (once) with umoci. */
function rootfsOf(name: Service): string {
  const bundle = join(work, name);
  if (!existsSync(bundle)) execFileSync('umoci', ['raw', 'unpack', '--image', `${layout}:${name}`, bundle]);
  return bundle;
}

/** Runs the image's entrypoint chrooted into its root filesystem, as its user, in its working directory. */
function runImage(
  name: Service,
  args: string[],
  env: Record<string, string>,
): { proc: ChildProcess; output: () => string } {
  const { config } = configOf(name);
  const [uid, gid] = config.User.split(':');
  const imageEnv = Object.fromEntries(
    config.Env.map((e) => e.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  const proc = spawn(
    'unshare',
    [
      `--root=${rootfsOf(name)}`,
      `--wd=${config.WorkingDir}`,
      `--setgid=${gid}`,
      `--setuid=${uid}`,
      '--',
      ...config.Entrypoint,
      ...args,
    ],
    { env: { ...imageEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  return { proc, output: () => out };
}

async function answers(url: string): Promise<boolean> {
  return fetch(url).then(
    (r) => r.ok,
    () => false,
  );
}

interface SbomComponent {
  name: string;
  version: string;
  type: string;
  purl: string;
}

describe('the bill of materials (issue 40 item 10)', () => {
  it.each(SERVICES)(
    '%s: /app/sbom.cdx.json names every npm package, the runtime and its Debian packages',
    (name) => {
      const root = rootfsOf(name);
      const bom = JSON.parse(readFileSync(join(root, 'app', 'sbom.cdx.json'), 'utf8')) as {
        bomFormat: string;
        specVersion: string;
        serialNumber: string;
        components: SbomComponent[];
      };
      expect(bom.bomFormat).toBe('CycloneDX');
      expect(bom.serialNumber).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
      const listed = new Map(bom.components.map((c) => [c.name, c]));
      // Every package installed in the image is listed at the version installed.
      // Package roots only (node_modules/<name> or node_modules/@scope/<name>): a package.json
      // deeper inside a package (a benchmark folder, a "type" marker) is not an installed package.
      const installed = execFileSync('find', [join(root, 'app', 'node_modules'), '-name', 'package.json'], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter((p) => /node_modules\/(@[^/]+\/)?[^/@][^/]*\/package\.json$/.test(p))
        .map((p) => JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string })
        .filter((p): p is { name: string; version: string } => Boolean(p.name && p.version));
      expect(installed.length).toBeGreaterThan(50);
      const versions = new Map<string, Set<string>>();
      for (const c of bom.components)
        versions.set(c.name, (versions.get(c.name) ?? new Set()).add(c.version));
      const missing = installed
        .filter((p) => !versions.get(p.name)?.has(p.version))
        .map((p) => `${p.name}@${p.version}`);
      expect(missing).toEqual([]);
      // The runtime is the Node.js the image runs.
      const node = execFileSync(join(root, 'usr', 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
      expect(listed.get('node')?.version).toBe(node.replace(/^v/, ''));
      // The C library and C++ runtime the node binary links come from named Debian packages.
      for (const deb of ['libc6', 'libstdc++6', 'libgcc-s1', 'ca-certificates'])
        expect(listed.get(deb)?.purl, deb).toMatch(new RegExp(`^pkg:deb/debian/${deb.replace('+', '\\+')}@`));
    },
  );
});

describe('each entrypoint starts from the unpacked root filesystem and answers its health check', () => {
  const running: ChildProcess[] = [];
  afterAll(() => {
    for (const p of running) p.kill('SIGKILL');
  });
  const kek = randomBytes(32).toString('hex');

  it('has no shell and no package manager', () => {
    const root = rootfsOf('proxy');
    for (const path of ['bin/sh', 'usr/bin/sh', 'bin/bash', 'usr/bin/npm', 'usr/bin/apt-get'])
      expect(existsSync(join(root, path)), path).toBe(false);
  });

  it.each([
    ['proxy', '/healthz'],
    ['console', '/healthz'],
    ['operator', '/healthz'],
    ['simulator', '/health'],
  ] as const)(
    '%s answers %s',
    async (name, path) => {
      const port = await freePort();
      const common = { REDIS_URL: redis.url, MODELPLANE_KEK: kek, LOG_LEVEL: 'warn' };
      // Writable paths are volumes in a pod; here the image's /tmp stands in for them.
      const { proc, output } = {
        proxy: () =>
          runImage('proxy', [], {
            ...common,
            PROXY_PORT: String(port),
            // The image runs NODE_ENV=production: signed links need a configured origin.
            PROXY_PUBLIC_URL: `http://127.0.0.1:${port}`,
            PROXY_DATA_DIR: '/tmp/journal',
            MEDIA_DIR: '/tmp/media',
          }),
        console: () => runImage('console', [], { ...common, CONSOLE_PORT: String(port) }),
        operator: () =>
          runImage('operator', ['--runtime', 'local', '--models-dir', '/tmp'], {
            ...common,
            OPERATOR_PORT: String(port),
          }),
        simulator: () =>
          runImage(
            'simulator',
            ['--host', '127.0.0.1', '--port', String(port), '--models', 'Test/Image'],
            {},
          ),
      }[name]();
      running.push(proc);
      await until(
        async () => proc.exitCode === null && (await answers(`http://127.0.0.1:${port}${path}`)),
        `${name} answering ${path} (it printed: ${output().slice(-2000)})`,
        90_000,
      );
      proc.kill('SIGTERM');
    },
    120_000,
  );
});

describe('reproducible', () => {
  it('the same inputs give the same images (byte-identical manifests, configs and layers)', async () => {
    const before = readFileSync(join(layout, 'index.json'), 'utf8');
    // The same inputs: the commit and time the first build stamped (a commit made meanwhile must
    // not count as a difference).
    const labels = configOf('proxy').config.Labels;
    const epoch = String(Date.parse(labels['org.opencontainers.image.created'] ?? '') / 1000);
    // scripts/build.sh clears dist/ (and the layout in it): build the second copy elsewhere and
    // put it back where the first was.
    const second = join(work, 'second');
    await run(join(repo, 'scripts', 'build-images.sh'), [], {
      env: buildEnv({
        IMAGES_OUT: second,
        SOURCE_DATE_EPOCH: epoch,
        IMAGE_REVISION: labels['org.opencontainers.image.revision'] ?? '',
      }),
      maxBuffer: 64 << 20,
    });
    expect(readFileSync(join(second, 'index.json'), 'utf8')).toBe(before);
    rmSync(layout, { recursive: true, force: true });
    mkdirSync(dirname(layout), { recursive: true });
    await run('cp', ['-a', second, layout]);
  }, 600_000);
});
