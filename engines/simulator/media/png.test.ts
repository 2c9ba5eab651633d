import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32, encodePng, gradientPng, PNG_SIGNATURE } from './png.ts';

/** Splits a PNG into chunks, checking each CRC. */
function readPngChunks(png: Buffer): Array<{ type: string; data: Buffer; crcOk: boolean }> {
  expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  const chunks: Array<{ type: string; data: Buffer; crcOk: boolean }> = [];
  let pos = 8;
  while (pos < png.length) {
    const length = png.readUInt32BE(pos);
    const typeBytes = png.subarray(pos + 4, pos + 8);
    const data = png.subarray(pos + 8, pos + 8 + length);
    const crc = png.readUInt32BE(pos + 8 + length);
    chunks.push({ type: typeBytes.toString('latin1'), data, crcOk: crc === crc32(typeBytes, data) });
    pos += 12 + length;
  }
  return chunks;
}

describe('png encoder', () => {
  it('crc32 matches the reference value for "123456789"', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('writes signature, IHDR, IDAT, IEND with valid CRCs and inflatable pixel rows', () => {
    const png = gradientPng(42, 64, 48);
    const chunks = readPngChunks(png);
    expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(chunks.every((c) => c.crcOk)).toBe(true);
    const ihdr = chunks[0]!.data;
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9], ihdr[12]]).toEqual([
      64, 48, 8, 2, 0,
    ]);
    const raw = inflateSync(chunks[1]!.data);
    expect(raw.length).toBe((64 * 3 + 1) * 48);
    for (let y = 0; y < 48; y++) expect(raw[y * (64 * 3 + 1)]).toBe(0);
  });

  it('encodes exact pixels and derives colour from the hue', () => {
    const png = encodePng(1, 1, new Uint8Array([1, 2, 3]));
    const idat = readPngChunks(png)[1]!.data;
    expect([...inflateSync(idat)]).toEqual([0, 1, 2, 3]);
    expect(gradientPng(10, 8, 8).equals(gradientPng(10, 8, 8))).toBe(true);
    expect(gradientPng(10, 8, 8).equals(gradientPng(200, 8, 8))).toBe(false);
  });
});
