import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientPng } from '../media/png.ts';
import { type Simulator, startSimulator } from '../server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ videoQueueMs: 300, videoMsPerSecond: 250 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForStatus(id: string, status: string): Promise<OpenAI.Videos.Video> {
  for (let i = 0; i < 400; i++) {
    const v = await client.videos.retrieve(id);
    if (v.status === status) return v;
    await sleep(10);
  }
  throw new Error(`video ${id} never reached ${status}`);
}

function topLevelBoxes(mp4: Buffer): string[] {
  const types: string[] = [];
  for (let pos = 0; pos < mp4.length; pos += mp4.readUInt32BE(pos))
    types.push(mp4.subarray(pos + 4, pos + 8).toString('latin1'));
  return types;
}

describe('videos', () => {
  it('goes queued → in_progress → completed with progress, then serves a real MP4 of the requested length', async () => {
    const created = await client.videos.create({
      model: 'Vid/One',
      prompt: 'waves',
      seconds: '4',
      size: '1280x720',
    });
    expect(created).toMatchObject({
      status: 'queued',
      progress: 0,
      model: 'Vid/One',
      seconds: '4',
      size: '1280x720',
    });
    const early = await fetch(`${sim.url}/v1/videos/${created.id}/content`);
    expect(early.status).toBe(404);
    // queued for 300 ms, then 4 s × 250 ms of rendering: room for a slow machine to look in between
    const mid = await waitForStatus(created.id, 'in_progress');
    await sleep(50);
    const later = await client.videos.retrieve(created.id);
    expect(later.progress).toBeGreaterThan(mid.progress);
    expect(later.progress).toBeLessThan(100);
    const done = await waitForStatus(created.id, 'completed');
    expect(done).toMatchObject({ status: 'completed', progress: 100 });
    expect(done.expires_at! - done.completed_at!).toBe(7 * 24 * 3600);
    const res = await client.videos.downloadContent(created.id);
    expect(res.headers.get('content-type')).toBe('video/mp4');
    const mp4 = Buffer.from(await res.arrayBuffer());
    expect(topLevelBoxes(mp4)).toEqual(['ftyp', 'moov', 'mdat']);
    const mvhd = mp4.indexOf('mvhd');
    expect(mp4.readUInt32BE(mvhd + 20) / mp4.readUInt32BE(mvhd + 16)).toBe(4);
    const thumb = await fetch(`${sim.url}/v1/videos/${created.id}/content?variant=thumbnail`);
    expect(thumb.headers.get('content-type')).toBe('image/png');
  });

  it('accepts JSON bodies and image-to-video multipart (input_reference file)', async () => {
    const json = await fetch(`${sim.url}/v1/videos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'v', prompt: 'json body', seconds: 8, size: '720x1280' }),
    });
    expect(await json.json()).toMatchObject({ status: 'queued', seconds: '8', size: '720x1280' });
    const i2v = await client.videos.create({
      model: 'v',
      prompt: 'animate this',
      input_reference: await toFile(gradientPng(5, 16, 16), 'ref.png', { type: 'image/png' }),
    });
    expect(i2v.status).toBe('queued');
  });

  it('x-sim-fail: video makes the job fail halfway with an error', async () => {
    const job = await client.videos.create(
      { model: 'v', prompt: 'doomed', seconds: '4' },
      { headers: { 'x-sim-fail': 'video' } },
    );
    const failed = await waitForStatus(job.id, 'failed');
    expect(failed.error).toMatchObject({ code: 'video_generation_failed' });
    expect(sim.stats().injectedFailures.video).toBe(1);
  });

  it('lists with cursor pagination, deletes, and 404s unknown ids; 400 on bad input', async () => {
    const page = await client.videos.list({ limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    const ids = [];
    for await (const v of client.videos.list({ limit: 2 })) ids.push(v.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(4);
    const gone = await client.videos.delete(ids[0]!);
    expect(gone).toMatchObject({ deleted: true, object: 'video.deleted' });
    expect((await fetch(`${sim.url}/v1/videos/${ids[0]}`)).status).toBe(404);
    const bad = await fetch(`${sim.url}/v1/videos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x', seconds: -1 }),
    });
    expect(bad.status).toBe(400);
  });
});

describe('video creates with an Idempotency-Key', () => {
  const create = (key: string | null, prompt = 'same job') =>
    fetch(`${sim.url}/v1/videos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify({ prompt, seconds: '1' }),
    });

  it('a create resent with the same key gets the same job; polls are logged with who sent them', async () => {
    const first = (await (await create('key-1')).json()) as { id: string };
    const again = (await (await create('key-1')).json()) as { id: string };
    const other = (await (await create('key-2')).json()) as { id: string };
    const unkeyed = (await (await create(null)).json()) as { id: string };
    expect(again.id).toBe(first.id);
    expect(new Set([first.id, other.id, unkeyed.id]).size).toBe(3);
    await fetch(`${sim.url}/v1/videos/${first.id}`, { headers: { 'x-modelplane-replica': 'r1' } });
    const job = sim.videoJobs().find((j) => j.id === first.id)!;
    expect(job).toMatchObject({ idempotencyKey: 'key-1', creates: 2, polls: [{ by: 'r1' }] });
  });

  it('dropVideoCreates: the job is made, the answer lost; the resend with its key finds it', async () => {
    sim.setOptions({ dropVideoCreates: 1 });
    await expect(create('key-drop', 'lost answer')).rejects.toThrow();
    const resent = (await (await create('key-drop', 'lost answer')).json()) as { id: string };
    expect(sim.videoJobs().filter((j) => j.prompt === 'lost answer')).toEqual([
      expect.objectContaining({ id: resent.id, creates: 2 }),
    ]);
  });
});
