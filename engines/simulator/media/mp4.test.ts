import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderVideo, VIDEO_FPS } from './video.ts';

interface Box {
  type: string;
  start: number;
  size: number;
  body: Buffer;
}

const CONTAINERS = new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'dinf']);

/** Parses top-level boxes and, recursively, the container boxes we emit. */
function parseBoxes(
  buf: Buffer,
  offset = 0,
  end = buf.length,
  out = new Map<string, Box>(),
): Map<string, Box> {
  let pos = offset;
  while (pos < end) {
    const size = buf.readUInt32BE(pos);
    const type = buf.subarray(pos + 4, pos + 8).toString('latin1');
    expect(size).toBeGreaterThanOrEqual(8);
    const box = { type, start: pos, size, body: buf.subarray(pos + 8, pos + size) };
    out.set(type, box);
    if (CONTAINERS.has(type)) parseBoxes(buf, pos + 8, pos + size, out);
    pos += size;
  }
  expect(pos).toBe(end);
  return out;
}

function hasFfprobe(): boolean {
  try {
    execFileSync('ffprobe', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('mp4 muxer + h264 encoder', () => {
  const mp4 = renderVideo({ hue: 120, seconds: 4, width: 1280, height: 720 });
  const boxes = parseBoxes(mp4);

  it('has ftyp first, moov before mdat, and the sample tables we need', () => {
    expect(mp4.subarray(4, 8).toString('latin1')).toBe('ftyp');
    for (const t of [
      'ftyp',
      'moov',
      'mvhd',
      'trak',
      'tkhd',
      'mdia',
      'mdhd',
      'hdlr',
      'minf',
      'vmhd',
      'dinf',
      'stbl',
    ]) {
      expect(boxes.has(t), t).toBe(true);
    }
    for (const t of ['stsd', 'stts', 'stss', 'stsc', 'stsz', 'stco', 'mdat'])
      expect(boxes.has(t), t).toBe(true);
    expect(boxes.get('moov')!.start).toBeLessThan(boxes.get('mdat')!.start);
    expect(boxes.get('stsd')!.body.includes(Buffer.from('avcC'))).toBe(true);
    expect(boxes.get('hdlr')!.body.subarray(8, 12).toString('latin1')).toBe('vide');
  });

  it('durations match the requested seconds (movie, media, and the sum of stts)', () => {
    const mvhd = boxes.get('mvhd')!.body;
    expect(mvhd.readUInt32BE(16) / mvhd.readUInt32BE(12)).toBe(4);
    const mdhd = boxes.get('mdhd')!.body;
    expect(mdhd.readUInt32BE(16) / mdhd.readUInt32BE(12)).toBe(4);
    const stts = boxes.get('stts')!.body;
    let total = 0;
    let samples = 0;
    for (let i = 0; i < stts.readUInt32BE(4); i++) {
      samples += stts.readUInt32BE(8 + i * 8);
      total += stts.readUInt32BE(8 + i * 8) * stts.readUInt32BE(12 + i * 8);
    }
    expect(samples).toBe(4 * VIDEO_FPS);
    expect(total).toBe(mdhd.readUInt32BE(16));
    const tkhd = boxes.get('tkhd')!.body;
    expect([tkhd.readUInt32BE(76) / 65536, tkhd.readUInt32BE(80) / 65536]).toEqual([1280, 720]);
  });

  it('stco points at the first sample inside mdat and stsz sums to the mdat payload', () => {
    const mdat = boxes.get('mdat')!;
    const stco = boxes.get('stco')!.body;
    expect(stco.readUInt32BE(8)).toBe(mdat.start + 8);
    const stsz = boxes.get('stsz')!.body;
    let sum = 0;
    for (let i = 0; i < stsz.readUInt32BE(8); i++) sum += stsz.readUInt32BE(12 + i * 4);
    expect(sum).toBe(mdat.size - 8);
    const firstNal = mp4[mdat.start + 8 + 4]! & 0x1f;
    expect(firstNal).toBe(5); // IDR slice
  });

  it.skipIf(!hasFfprobe())('decodes cleanly with ffmpeg and ffprobe reports the duration', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-mp4-'));
    const file = join(dir, 'v.mp4');
    writeFileSync(file, renderVideo({ hue: 300, seconds: 2.5, width: 720, height: 1280 }));
    const probe = execFileSync('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration:stream=codec_name,width,height',
      '-of',
      'json',
      file,
    ]);
    const info = JSON.parse(probe.toString());
    expect(info.streams[0].codec_name).toBe('h264');
    expect(Number(info.format.duration)).toBeCloseTo(2.5, 3);
    const log = execFileSync('ffmpeg', ['-v', 'warning', '-i', file, '-f', 'null', '-'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(log.toString()).toBe('');
  });
});
