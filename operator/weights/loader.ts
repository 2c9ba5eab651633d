// The weight loader a loader Job runs (operator/weights/objects.ts), from the operator's own image:
//   loader load --from <hf:org/name@rev | dir:/source | s3://bucket/prefix> --to <dir> [--endpoint URL] [--region R]
//   loader evict --dir <dir>
// Loads write into a sibling `.partial-<name>` folder and rename it into place only once every file
// is there, with a marker naming the source: a crash, an eviction or a pod killed mid-copy leaves no
// folder an engine could take for complete weights, and a re-run of a finished load copies nothing
// (a Job re-created after its record was deleted costs one stat). Credentials come from the
// environment (HF_TOKEN; AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, read by the AWS SDK) and are
// never printed.
import { createWriteStream } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, normalize, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

export const COMPLETE_MARKER = '.modelplane-complete';

export interface LoadOptions {
  from: string;
  to: string;
  /** S3-compatible endpoint (path-style addressing); unset: AWS. */
  endpoint?: string | undefined;
  region?: string | undefined;
  /** The Hugging Face Hub (HF_ENDPOINT in the environment); default https://huggingface.co. */
  hubUrl?: string | undefined;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface LoadResult {
  /** Files copied by this run; 0 when the weights were already complete. */
  files: number;
  bytes: number;
  skipped: boolean;
}

const partialOf = (to: string) => join(dirname(to), `.partial-${basename(to)}`);
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** A relative file path from a remote listing, refused if it would leave the folder. */
function safeRelative(path: string): string {
  const rel = normalize(path).replace(/^(\.\/)+/, '');
  if (rel === '' || rel.startsWith('..') || rel.startsWith(sep) || rel.split(sep).includes('..'))
    throw new Error(`refusing a file outside the weights folder: ${path}`);
  return rel;
}

async function writeStream(dir: string, rel: string, body: Readable): Promise<void> {
  const target = join(dir, safeRelative(rel));
  await mkdir(dirname(target), { recursive: true });
  await pipeline(body, createWriteStream(target));
}

async function fromDirectory(source: string, dir: string): Promise<void> {
  if (!(await exists(source))) throw new Error(`source folder ${source} does not exist`);
  await cp(source, dir, { recursive: true, errorOnExist: false, force: true });
}

async function fromS3(url: string, dir: string, o: LoadOptions): Promise<void> {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!match) throw new Error(`not an s3:// URL: ${url}`);
  const [, bucket = '', rawPrefix = ''] = match;
  const prefix = rawPrefix === '' || rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`;
  const client = new S3Client({
    region: o.region ?? o.env?.AWS_REGION ?? 'us-east-1',
    ...(o.endpoint ? { endpoint: o.endpoint, forcePathStyle: true } : {}),
  });
  try {
    let token: string | undefined;
    let count = 0;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key || object.Key.endsWith('/')) continue;
        const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }));
        if (!(got.Body instanceof Readable)) throw new Error(`no body for s3://${bucket}/${object.Key}`);
        await writeStream(dir, object.Key.slice(prefix.length), got.Body);
        count++;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    if (count === 0) throw new Error(`nothing under ${url}`);
  } finally {
    client.destroy();
  }
}

async function fromHub(ref: string, dir: string, o: LoadOptions): Promise<void> {
  const at = ref.lastIndexOf('@');
  const repo = at > 0 ? ref.slice(0, at) : ref;
  const revision = at > 0 ? ref.slice(at + 1) : 'main';
  const hub = (o.hubUrl ?? o.env?.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/$/, '');
  const token = o.env?.HF_TOKEN;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const rev = encodeURIComponent(revision);
  const info = await fetch(`${hub}/api/models/${repo}/revision/${rev}`, { headers });
  if (!info.ok) throw new Error(`the Hub answered ${info.status} for ${repo}@${revision}`);
  const { siblings = [] } = (await info.json()) as { siblings?: { rfilename: string }[] };
  for (const { rfilename } of siblings) {
    const file = await fetch(
      `${hub}/${repo}/resolve/${rev}/${rfilename.split('/').map(encodeURIComponent).join('/')}`,
      {
        headers,
      },
    );
    if (!file.ok || !file.body) throw new Error(`the Hub answered ${file.status} for ${rfilename}`);
    await writeStream(
      dir,
      rfilename,
      Readable.fromWeb(file.body as import('node:stream/web').ReadableStream),
    );
  }
}

async function tally(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    files++;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

export async function loadWeights(o: LoadOptions): Promise<LoadResult> {
  const log = o.log ?? (() => {});
  const marker = join(o.to, COMPLETE_MARKER);
  if (await exists(marker)) {
    const was = JSON.parse(await readFile(marker, 'utf8')) as { from?: string };
    if (was.from === o.from) {
      log(`${o.to} already holds ${o.from}: nothing to copy`);
      return { files: 0, bytes: 0, skipped: true };
    }
  }
  const partial = partialOf(o.to);
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  log(`loading ${o.from} into ${partial}`);
  if (o.from.startsWith('dir:')) await fromDirectory(o.from.slice('dir:'.length), partial);
  else if (o.from.startsWith('s3://')) await fromS3(o.from, partial, o);
  else if (o.from.startsWith('hf:')) await fromHub(o.from.slice('hf:'.length), partial, o);
  else throw new Error(`unknown source ${o.from} (hf:, dir: or s3://)`);
  const copied = await tally(partial);
  await writeFile(join(partial, COMPLETE_MARKER), JSON.stringify({ from: o.from, ...copied }));
  // Anything at the target without a matching marker is a leftover: replaced whole.
  await rm(o.to, { recursive: true, force: true });
  await rename(partial, o.to);
  log(`${o.to}: ${copied.files} file(s), ${copied.bytes} bytes from ${o.from}`);
  return { ...copied, skipped: false };
}

/** Removes a Model's weights and any partial copy beside them. */
export async function evictWeights(dir: string): Promise<void> {
  await rm(partialOf(dir), { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      dir: { type: 'string' },
      endpoint: { type: 'string' },
      region: { type: 'string' },
    },
    strict: true,
  });
  const log = (line: string) => process.stdout.write(`${line}\n`);
  if (command === 'load' && values.from && values.to) {
    await loadWeights({
      from: values.from,
      to: values.to,
      endpoint: values.endpoint,
      region: values.region,
      env,
      log,
    });
  } else if (command === 'evict' && values.dir) {
    await evictWeights(values.dir);
    log(`evicted ${values.dir}`);
  } else {
    throw new Error(
      'usage: loader load --from SRC --to DIR [--endpoint URL] [--region R] | loader evict --dir DIR',
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2), process.env).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
