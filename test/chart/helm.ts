// helm for the chart's tests: the binary scripts/build-helm.sh builds from the Go module proxy
// (cached under ~/.cache/modelplane), run with its own config, cache and data folders so a test
// neither reads nor writes the user's helm repositories.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);
export const repo = new URL('../../', import.meta.url).pathname;
export const chartDir = join(repo, 'charts', 'modelplane');
export const allOnValues = join(chartDir, 'ci', 'all-on-values.yaml');

let bin: string | undefined;
/** The cached helm binary, built on first use (minutes on a cold Go cache; progress on stderr). */
export function helmBinary(): string {
  bin ??= execFileSync(join(repo, 'scripts', 'build-helm.sh'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  return bin;
}

const home = mkdtempSync(join(tmpdir(), 'mp-helm-'));
const env = {
  ...process.env,
  HELM_CONFIG_HOME: join(home, 'config'),
  HELM_CACHE_HOME: join(home, 'cache'),
  HELM_DATA_HOME: join(home, 'data'),
};

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm; a non-zero exit is returned (tests of refusals read it), not thrown. */
export async function helm(args: string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(helmBinary(), args, { env, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are arbitrary Kubernetes objects
  [key: string]: any;
}

/** `helm template` of the chart as release `mp` in namespace `modelplane`, parsed. */
export async function render(extra: string[] = [], namespace = 'modelplane'): Promise<K8sObject[]> {
  const r = await helm(['template', 'mp', chartDir, '--namespace', namespace, '--include-crds', ...extra]);
  if (r.code !== 0) throw new Error(`helm template failed (${r.code}):\n${r.stderr}`);
  const docs = parseAllDocuments(r.stdout);
  // Strict YAML: a duplicate key (two templates writing the same label) is an error, not a silent overwrite.
  const errors = docs.flatMap((d) => d.errors.map((e) => e.message));
  if (errors.length > 0) throw new Error(`helm template wrote invalid YAML:\n${errors.join('\n')}`);
  return docs.map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

export const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o)
    throw new Error(
      `no ${kind} ${name} among ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`,
    );
  return o;
};

/** The chart rendered with the default values and with every option on (helm built first). */
export async function renderDefaultsAndAllOn(): Promise<[K8sObject[], K8sObject[]]> {
  helmBinary();
  const [defaults, allOn] = await Promise.all([render(), render(['-f', allOnValues])]);
  return [defaults, allOn];
}
