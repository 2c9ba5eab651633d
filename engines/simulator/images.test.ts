import { inflateSync } from 'node:zlib';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc32, gradientPng, PNG_SIGNATURE } from './media/png.ts';
import { type Simulator, startSimulator } from './server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ imageMs: 0 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

/** Checks signature, IHDR size and every chunk CRC; returns [width, height]. */
function checkPng(png: Buffer): [number, number] {
  expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  let pos = 8;
  const idat: Buffer[] = [];
  while (pos < png.length) {
    const len = png.readUInt32BE(pos);
    const type = png.subarray(pos + 4, pos + 8);
    const data = png.subarray(pos + 8, pos + 8 + len);
    expect(png.readUInt32BE(pos + 8 + len)).toBe(crc32(type, data));
    if (type.toString() === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  expect(inflateSync(Buffer.concat(idat)).length).toBe((width * 3 + 1) * height);
  return [width, height];
}

describe('images', () => {
  it('generations: n PNGs as b64_json at the requested size, different per index, deterministic', async () => {
    const r = await client.images.generate({
      model: 'img',
      prompt: 'a red fox',
      n: 3,
      size: '64x48',
      response_format: 'b64_json',
    });
    const pngs = r.data!.map((d) => Buffer.from(d.b64_json!, 'base64'));
    expect(pngs).toHaveLength(3);
    for (const png of pngs) expect(checkPng(png)).toEqual([64, 48]);
    expect(pngs[0]!.equals(pngs[1]!)).toBe(false);
    const again = await client.images.generate({ model: 'img', prompt: 'a red fox', n: 1, size: '64x48' });
    expect(Buffer.from(again.data![0]!.b64_json!, 'base64').equals(pngs[0]!)).toBe(true);
  });

  it('generations: response_format url serves the PNG from the simulator', async () => {
    const r = await client.images.generate({
      model: 'img',
      prompt: 'blue sky',
      size: '32x32',
      response_format: 'url',
    });
    const url = r.data![0]!.url!;
    expect(url.startsWith(`${sim.url}/files/`)).toBe(true);
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(checkPng(Buffer.from(await res.arrayBuffer()))).toEqual([32, 32]);
    expect((await fetch(`${sim.url}/files/deadbeef.png`)).status).toBe(404);
  });

  it.each([
    [{ model: 'img', prompt: 'x', n: 0 }, 'n'],
    [{ model: 'img', prompt: 'x', n: 11 }, 'n'],
    [{ model: 'img', prompt: 'x', size: 'big' }, 'size'],
    [{ model: 'img' }, 'prompt'],
    [{ model: 'img', prompt: 'x', response_format: 'jpeg' }, 'response_format'],
  ])('generations: 400 for %j', async (body, param) => {
    const res = await fetch(`${sim.url}/v1/images/generations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param } });
  });

  it('edits: multipart with one or several images returns PNGs that depend on the input', async () => {
    const input = gradientPng(10, 16, 16);
    const one = await client.images.edit({
      model: 'img-edit',
      prompt: 'add a hat',
      image: await toFile(input, 'in.png', { type: 'image/png' }),
      size: '40x40',
      n: 2,
    });
    expect(one.data).toHaveLength(2);
    expect(checkPng(Buffer.from(one.data![0]!.b64_json!, 'base64'))).toEqual([40, 40]);
    const several = await client.images.edit({
      model: 'img-edit',
      prompt: 'add a hat',
      image: [
        await toFile(input, 'a.png', { type: 'image/png' }),
        await toFile(gradientPng(99, 8, 8), 'b.png'),
      ],
      size: '40x40',
    });
    expect(several.data![0]!.b64_json).not.toBe(one.data![0]!.b64_json);
  });

  it('edits: 400 without an image, with a non-image file, or with a JSON body', async () => {
    const form = new FormData();
    form.append('model', 'img-edit');
    form.append('prompt', 'x');
    expect((await fetch(`${sim.url}/v1/images/edits`, { method: 'POST', body: form })).status).toBe(400);
    form.append('image', new Blob(['not an image']), 'x.txt');
    const bad = await fetch(`${sim.url}/v1/images/edits`, { method: 'POST', body: form });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { param: 'image[0]' } });
    const json = await fetch(`${sim.url}/v1/images/edits`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(json.status).toBe(400);
  });
});
