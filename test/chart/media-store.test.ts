// The console reads batches' output and error files from the proxies' media store (console/app.ts),
// so the chart gives both the same store from one place in values (media.*): the same MEDIA_STORE
// and S3 settings, the S3 keys from the same Secret, and on `fs` the same shared claim. A console
// on another store answers 404 for every batch file while `make dev` (one store) works.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/index.ts';
import { createObjectStore } from '../../core/storage/index.ts';
import { UrlSigner } from '../../core/storage/url-signer.ts';
import { startS3, type TestS3 } from '../helpers/s3-server.ts';
import { allOnValues, find, helmBinary, type K8sObject, render } from './helm.ts';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

const container = (objects: K8sObject[], kind: string, name: string) =>
  find(objects, kind, `mp-modelplane-${name}`).spec.template.spec.containers[0];
const storeEnv = (objects: K8sObject[], kind: string, name: string): EnvVar[] =>
  (container(objects, kind, name).env as EnvVar[]).filter((e) => /^(MEDIA_STORE|MEDIA_DIR|S3_)/.test(e.name));
const proxyEnv = (o: K8sObject[]) => storeEnv(o, 'StatefulSet', 'proxy');
const consoleEnv = (o: K8sObject[]) => storeEnv(o, 'Deployment', 'console');

/** A pod's environment as the kubelet makes it: values, and secretKeyRefs read from `secrets`. */
function resolve(env: EnvVar[], secrets: Record<string, Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of env) {
    const ref = e.valueFrom?.secretKeyRef;
    const value = ref ? secrets[ref.name]?.[ref.key] : e.value;
    if (value === undefined) throw new Error(`${e.name}: nothing to resolve it from`);
    out[e.name] = value;
  }
  return out;
}

beforeAll(() => {
  helmBinary();
}, 900_000);

describe('the console and the proxies share one media store', () => {
  it('s3: the console has exactly the proxies’ store settings, its keys from the same Secret', async () => {
    const objects = await render(['-f', allOnValues]);
    const proxy = proxyEnv(objects);
    expect(proxy.map((e) => e.name)).toEqual(
      expect.arrayContaining([
        'MEDIA_STORE',
        'S3_BUCKET',
        'S3_ENDPOINT',
        'S3_ACCESS_KEY_ID',
        'S3_SECRET_ACCESS_KEY',
      ]),
    );
    expect(consoleEnv(objects)).toEqual(proxy);
    expect(
      consoleEnv(objects).find((e) => e.name === 'S3_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef,
    ).toEqual({
      name: 'media-s3',
      key: 'secretAccessKey',
    });
  });

  it('fs on a shared claim: the console mounts the proxies’ claim, read-only, where its MEDIA_DIR points', async () => {
    const objects = await render(['--set', 'media.fs.existingClaim=media-rwx']);
    expect(consoleEnv(objects)).toEqual(proxyEnv(objects));
    const dir = consoleEnv(objects).find((e) => e.name === 'MEDIA_DIR')?.value;
    for (const [kind, name, readOnly] of [
      ['StatefulSet', 'proxy', undefined],
      ['Deployment', 'console', true],
    ] as const) {
      const pod = find(objects, kind, `mp-modelplane-${name}`).spec.template.spec;
      const mount = pod.containers[0].volumeMounts.find((m: { name: string }) => m.name === 'media');
      expect(mount, name).toMatchObject({ mountPath: dir });
      expect(mount.readOnly, name).toBe(readOnly);
      const volume = pod.volumes.find((v: { name: string }) => v.name === 'media');
      expect(volume.persistentVolumeClaim.claimName, name).toBe('media-rwx');
    }
  });

  it('fs on the proxies’ own emptyDirs (the defaults): the console mounts none of them (NOTES warn instead)', async () => {
    const objects = await render();
    const console = find(objects, 'Deployment', 'mp-modelplane-console').spec.template.spec;
    expect(console.volumes.map((v: { name: string }) => v.name)).toEqual(['tmp']);
    expect(consoleEnv(objects)).toEqual(proxyEnv(objects));
  });

  describe('against a real S3 server', () => {
    let s3: TestS3;
    beforeAll(async () => {
      s3 = await startS3();
    }, 600_000);
    afterAll(async () => {
      await s3?.stop();
    });

    it("a batch file the proxy's rendered environment writes, the console's rendered environment reads", async () => {
      const objects = await render([
        '--set',
        'media.store=s3',
        '--set',
        `media.s3.bucket=${s3.bucket}`,
        '--set',
        `media.s3.endpoint=${s3.endpoint}`,
        '--set',
        `media.s3.region=${s3.region}`,
        '--set',
        'media.s3.prefix=mp/',
        '--set',
        'media.s3.existingSecret=media-keys',
      ]);
      const secrets = { 'media-keys': { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } };
      const kek = randomBytes(32).toString('hex');
      const storeOf = async (env: EnvVar[]) => {
        const config = loadConfig({ MODELPLANE_KEK: kek, ...resolve(env, secrets) });
        return createObjectStore(config, new UrlSigner(config.kek));
      };
      const [proxyStore, consoleStore] = await Promise.all([
        storeOf(proxyEnv(objects)),
        storeOf(consoleEnv(objects)),
      ]);
      const key = `batches/file-${randomBytes(6).toString('hex')}.jsonl`;
      await proxyStore.put(key, Buffer.from('{"custom_id":"a"}\n'), 'application/jsonl');
      const got = await consoleStore.get(key);
      expect(got).not.toBeNull();
      const chunks: Buffer[] = [];
      for await (const c of got!.body) chunks.push(Buffer.from(c));
      expect(Buffer.concat(chunks).toString()).toBe('{"custom_id":"a"}\n');
    });
  });
});
