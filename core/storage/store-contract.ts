// The behaviour every ObjectStore must have, as a test suite each implementation runs
// (fs-store.test.ts against a folder, s3-store.test.ts against a real S3 server).
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { ObjectStore } from './store.ts';

export interface ContractSubject {
  store: ObjectStore;
  /** The origin signed URLs are made under (where the store's files are served). */
  origin: string;
}

async function text(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function storeContract(name: string, subject: () => ContractSubject): void {
  describe(`${name}: the object store contract`, () => {
    it('stores from a buffer and from a stream; get returns the bytes, type and size', async () => {
      const { store } = subject();
      await store.put('t/a.png', Buffer.from('png bytes'), 'image/png');
      await store.put('t/b.mp4', Readable.from([Buffer.from('mp4 '), Buffer.from('bytes')]), 'video/mp4');
      const a = (await store.get('t/a.png'))!;
      expect(await text(a.body)).toBe('png bytes');
      expect(a.contentType).toBe('image/png');
      expect(a.size).toBe(9);
      const b = (await store.get('t/b.mp4'))!;
      expect(await text(b.body)).toBe('mp4 bytes');
      expect(b.contentType).toBe('video/mp4');
    });

    it('put replaces; delete removes; a missing object is null and deleting it is fine', async () => {
      const { store } = subject();
      await store.put('t/c.png', Buffer.from('one'), 'image/png');
      await store.put('t/c.png', Buffer.from('two'), 'image/png');
      expect(await text((await store.get('t/c.png'))!.body)).toBe('two');
      await store.delete('t/c.png');
      expect(await store.get('t/c.png')).toBeNull();
      await store.delete('t/never.png');
      expect(await store.get('t/never.png')).toBeNull();
    });

    it('no key can escape the store', async () => {
      const { store } = subject();
      for (const key of [
        '../x.png',
        't/../../x.png',
        '/etc/passwd',
        't//x.png',
        'T/X.PNG',
        '',
        't/x.png\n',
      ]) {
        await expect(store.put(key, Buffer.from('x'), 'image/png'), key).rejects.toThrow(
          /invalid object key/,
        );
        await expect(store.get(key), key).rejects.toThrow(/invalid object key/);
      }
    });

    it('a signed URL serves the object without a key until it expires; a tampered one is refused', async () => {
      const { store, origin } = subject();
      await store.put('t/d.png', Buffer.from('signed'), 'image/png');
      const url = await store.signedUrl('t/d.png', Date.now() + 60_000, origin);
      const ok = await fetch(url);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe('signed');
      const tampered = new URL(url);
      const sigName = tampered.searchParams.has('sig') ? 'sig' : 'X-Amz-Signature';
      const sig = tampered.searchParams.get(sigName)!;
      tampered.searchParams.set(sigName, `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`);
      expect((await fetch(tampered)).status).toBe(403);
      const expired = await store.signedUrl('t/d.png', Date.now() + 1_000, origin);
      await new Promise((r) => setTimeout(r, 2_100));
      expect((await fetch(expired)).status).toBe(403);
    });
  });
}
