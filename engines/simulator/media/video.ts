// Renders the simulator's "generated" video: a colour gradient whose hue derives from the prompt and
// drifts once per second, encoded as H.264 (one I_PCM key frame per second, skipped frames between)
// in an MP4 whose duration is exactly the requested number of seconds.

import { hueToRgb } from '../hash.ts';
import { h264Parameters, idrPicture, repeatPicture, type YuvFrame } from './h264.ts';
import { avccSample, type Mp4Sample, muxMp4 } from './mp4.ts';

export const VIDEO_FPS = 10;
const TIMESCALE = 1000;
/** Longest coded side: I_PCM frames are raw, so the coded picture stays small and is scaled on display. */
const MAX_CODED_SIDE = 160;

export interface VideoRequest {
  hue: number;
  seconds: number;
  width: number;
  height: number;
}

export function codedSize(width: number, height: number): { width: number; height: number } {
  const scale = Math.min(1, MAX_CODED_SIDE / Math.max(width, height));
  const even = (v: number) => Math.max(16, 2 * Math.round((v * scale) / 2));
  return { width: even(width), height: even(height) };
}

function rgbToYuv([r, g, b]: [number, number, number]): [number, number, number] {
  const y = 16 + (65.738 * r + 129.057 * g + 25.064 * b) / 256;
  const u = 128 + (-37.945 * r - 74.494 * g + 112.439 * b) / 256;
  const v = 128 + (112.439 * r - 94.154 * g - 18.285 * b) / 256;
  return [Math.round(y), Math.round(u), Math.round(v)];
}

/** A diagonal gradient from the hue's colour to a darker neighbour hue, in 4:2:0 planes. */
export function renderFrame(hue: number, codedWidth: number, codedHeight: number): YuvFrame {
  const width = Math.ceil(codedWidth / 16) * 16;
  const height = Math.ceil(codedHeight / 16) * 16;
  const from = rgbToYuv(hueToRgb(hue));
  const to = rgbToYuv(hueToRgb(hue + 60).map((c) => c / 3) as [number, number, number]);
  const data = new Uint8Array((width * height * 3) / 2);
  const mix = (a: number, b: number, t: number) => Math.round(a + (b - a) * t);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data[y * width + x] = mix(from[0], to[0], (x + y) / (width + height));
  }
  const cw = width / 2;
  const ch = height / 2;
  const cb = width * height;
  const cr = cb + cw * ch;
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      const t = (x + y) / (cw + ch);
      data[cb + y * cw + x] = mix(from[1], to[1], t);
      data[cr + y * cw + x] = mix(from[2], to[2], t);
    }
  }
  return { width, height, data };
}

export function renderVideo(req: VideoRequest): Buffer {
  const coded = codedSize(req.width, req.height);
  const params = h264Parameters(coded.width, coded.height);
  const frameDuration = TIMESCALE / VIDEO_FPS;
  const samples: Mp4Sample[] = [];
  const totalFrames = Math.max(1, Math.round(req.seconds * VIDEO_FPS));
  let frameNum = 0;
  for (let i = 0; i < totalFrames; i++) {
    if (i % VIDEO_FPS === 0) {
      const second = i / VIDEO_FPS;
      const frame = renderFrame(req.hue + second * 25, coded.width, coded.height);
      samples.push({ data: avccSample(idrPicture(frame, second)), duration: frameDuration, keyframe: true });
      frameNum = 0;
    } else {
      frameNum++;
      const data = avccSample(repeatPicture(coded.width, coded.height, frameNum));
      samples.push({ data, duration: frameDuration, keyframe: false });
    }
  }
  return muxMp4({
    width: coded.width,
    height: coded.height,
    displayWidth: req.width,
    displayHeight: req.height,
    timescale: TIMESCALE,
    params,
    samples,
  });
}
