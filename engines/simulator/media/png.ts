// A minimal PNG encoder (8-bit RGB, no interlace, filter "None") over node:zlib, and the simulator's
// "generated" picture: a gradient whose colour derives from the prompt.

import { deflateSync } from 'node:zlib';
import { hueToRgb } from '../hash.ts';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (ISO 3309 / PNG), as used for chunk checksums. */
export function crc32(...parts: Uint8Array[]): number {
  let c = 0xffffffff;
  for (const part of parts) {
    for (const b of part) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(head.subarray(4), data));
  return Buffer.concat([head, data, crc]);
}

/** Encodes width×height RGB pixels (3 bytes each, row-major). */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  if (rgb.length !== width * height * 3) throw new Error('pixel buffer does not match the size');
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour
  // compression, filter and interlace methods stay 0
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0; // filter type None
    raw.set(rgb.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 1 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A diagonal gradient from the hue's colour to a darker neighbouring hue. */
export function gradientPng(hue: number, width: number, height: number): Buffer {
  const from = hueToRgb(hue);
  const to = hueToRgb(hue + 60).map((c) => c / 3);
  const rgb = new Uint8Array(width * height * 3);
  const span = Math.max(1, width + height - 2);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = (x + y) / span;
      const i = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) rgb[i + c] = Math.round(from[c]! + (to[c]! - from[c]!) * t);
    }
  }
  return encodePng(width, height, rgb);
}
