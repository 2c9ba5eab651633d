// A minimal ISO-BMFF (MP4) muxer for one H.264 video track: ftyp, moov (before mdat, so players can
// start before the whole file arrives), mdat. Samples are length-prefixed NAL units (avcC, 4 bytes).

import type { H264Parameters } from './h264.ts';

export interface Mp4Sample {
  data: Buffer;
  /** Duration in track timescale units. */
  duration: number;
  keyframe: boolean;
}

export interface Mp4Track {
  /** Coded picture size (cropped), as in the SPS. */
  width: number;
  height: number;
  /** Presentation size written in tkhd; players scale to it. Defaults to width×height. */
  displayWidth?: number;
  displayHeight?: number;
  timescale: number;
  params: H264Parameters;
  samples: Mp4Sample[];
}

const MOVIE_TIMESCALE = 1000;
const IDENTITY_MATRIX = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000];

function u8(v: number): Buffer {
  return Buffer.from([v & 0xff]);
}
function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}
function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}
function zeros(n: number): Buffer {
  return Buffer.alloc(n);
}

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  return Buffer.concat([u32(8 + body.length), Buffer.from(type, 'latin1'), body]);
}

function fullBox(type: string, version: number, flags: number, ...payload: Buffer[]): Buffer {
  return box(type, u32((version << 24) | flags), ...payload);
}

function matrix(): Buffer {
  return Buffer.concat(IDENTITY_MATRIX.map(u32));
}

function avcC(p: H264Parameters): Buffer {
  return box(
    'avcC',
    u8(1), // configurationVersion
    u8(p.profileIdc),
    u8(p.constraintFlags),
    u8(p.levelIdc),
    u8(0xff), // 6 reserved bits + lengthSizeMinusOne = 3
    u8(0xe1), // 3 reserved bits + one SPS
    u16(p.sps.length),
    p.sps,
    u8(1),
    u16(p.pps.length),
    p.pps,
  );
}

function avc1(t: Mp4Track): Buffer {
  const compressor = Buffer.alloc(32);
  const name = 'modelplane-simulator';
  compressor[0] = name.length;
  compressor.write(name, 1, 'latin1');
  return box(
    'avc1',
    zeros(6),
    u16(1), // data_reference_index
    zeros(16), // pre_defined, reserved, pre_defined[3]
    u16(t.width),
    u16(t.height),
    u32(0x00480000), // 72 dpi
    u32(0x00480000),
    u32(0),
    u16(1), // frame_count
    compressor,
    u16(0x0018), // depth
    u16(0xffff), // pre_defined = -1
    avcC(t.params),
  );
}

function sampleTable(t: Mp4Track, chunkOffset: number): Buffer {
  const runs: Array<[count: number, delta: number]> = [];
  for (const s of t.samples) {
    const last = runs[runs.length - 1];
    if (last && last[1] === s.duration) last[0]++;
    else runs.push([1, s.duration]);
  }
  const sync: number[] = [];
  t.samples.forEach((s, i) => {
    if (s.keyframe) sync.push(i + 1);
  });
  return box(
    'stbl',
    fullBox('stsd', 0, 0, u32(1), avc1(t)),
    fullBox('stts', 0, 0, u32(runs.length), ...runs.flatMap(([c, d]) => [u32(c), u32(d)])),
    fullBox('stss', 0, 0, u32(sync.length), ...sync.map(u32)),
    fullBox('stsc', 0, 0, u32(1), u32(1), u32(t.samples.length), u32(1)),
    fullBox('stsz', 0, 0, u32(0), u32(t.samples.length), ...t.samples.map((s) => u32(s.data.length))),
    fullBox('stco', 0, 0, u32(1), u32(chunkOffset)),
  );
}

function moov(t: Mp4Track, mediaDuration: number, chunkOffset: number): Buffer {
  const movieDuration = Math.round((mediaDuration * MOVIE_TIMESCALE) / t.timescale);
  const displayW = t.displayWidth ?? t.width;
  const displayH = t.displayHeight ?? t.height;
  const mvhd = fullBox(
    'mvhd',
    0,
    0,
    u32(0), // creation_time
    u32(0), // modification_time
    u32(MOVIE_TIMESCALE),
    u32(movieDuration),
    u32(0x00010000), // rate 1.0
    u16(0x0100), // volume 1.0
    zeros(10),
    matrix(),
    zeros(24),
    u32(2), // next_track_ID
  );
  const tkhd = fullBox(
    'tkhd',
    0,
    3, // enabled | in movie
    u32(0),
    u32(0),
    u32(1), // track_ID
    u32(0),
    u32(movieDuration),
    zeros(8),
    u16(0), // layer
    u16(0), // alternate_group
    u16(0), // volume
    u16(0),
    matrix(),
    u32(displayW * 0x10000),
    u32(displayH * 0x10000),
  );
  const mdhd = fullBox(
    'mdhd',
    0,
    0,
    u32(0),
    u32(0),
    u32(t.timescale),
    u32(mediaDuration),
    u16(0x55c4),
    u16(0),
  );
  const hdlr = fullBox('hdlr', 0, 0, u32(0), Buffer.from('vide'), zeros(12), Buffer.from('VideoHandler\0'));
  const vmhd = fullBox('vmhd', 0, 1, zeros(8));
  const dinf = box('dinf', fullBox('dref', 0, 0, u32(1), fullBox('url ', 0, 1)));
  const minf = box('minf', vmhd, dinf, sampleTable(t, chunkOffset));
  return box('moov', mvhd, box('trak', tkhd, box('mdia', mdhd, hdlr, minf)));
}

/** Serialises one track into a complete, progressive-download MP4 file. */
export function muxMp4(track: Mp4Track): Buffer {
  if (track.samples.length === 0) throw new Error('an MP4 track needs at least one sample');
  const ftyp = box(
    'ftyp',
    Buffer.from('isom'),
    u32(0x200),
    Buffer.from('isom'),
    Buffer.from('iso2'),
    Buffer.from('avc1'),
    Buffer.from('mp41'),
  );
  const payloads = track.samples.map((s) => s.data);
  const mdat = box('mdat', ...payloads);
  const mediaDuration = track.samples.reduce((sum, s) => sum + s.duration, 0);
  // moov's size does not depend on the offset value, so measure once and then write it for real.
  const moovSize = moov(track, mediaDuration, 0).length;
  const chunkOffset = ftyp.length + moovSize + 8;
  return Buffer.concat([ftyp, moov(track, mediaDuration, chunkOffset), mdat]);
}

/** Length-prefixes NAL units as one sample (avcC lengthSizeMinusOne = 3). */
export function avccSample(...nals: Buffer[]): Buffer {
  return Buffer.concat(nals.flatMap((n) => [u32(n.length), n]));
}
