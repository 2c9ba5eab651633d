import { describe, expect, it } from 'vitest';
import { multipartBoundary, multipartFields, parseMultipart } from './multipart.ts';

describe('multipart parser', () => {
  it('parses fields and files, binary-safe, from what FormData produces', async () => {
    const form = new FormData();
    form.append('prompt', 'a cat');
    form.append('n', '2');
    const bytes = new Uint8Array([0, 13, 10, 45, 45, 255]);
    form.append('image[]', new Blob([bytes], { type: 'image/png' }), 'a.png');
    const req = new Request('http://x', { method: 'POST', body: form });
    const boundary = multipartBoundary(req.headers.get('content-type') ?? undefined);
    expect(boundary).toBeTruthy();
    const parts = parseMultipart(Buffer.from(await req.arrayBuffer()), boundary!);
    expect(multipartFields(parts)).toEqual({ prompt: 'a cat', n: '2' });
    const file = parts.find((p) => p.name === 'image[]')!;
    expect(file.filename).toBe('a.png');
    expect(file.contentType).toBe('image/png');
    expect([...file.data]).toEqual([...bytes]);
  });

  it('rejects bodies without the boundary', () => {
    expect(() => parseMultipart(Buffer.from('nope'), 'b')).toThrow(/boundary/);
    expect(multipartBoundary('application/json')).toBeNull();
  });
});
