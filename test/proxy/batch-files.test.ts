// OpenAI's Files API for batches (docs/batches.md), through the official openai SDK against the
// real proxy, Redis and the media store: upload, retrieve, list with cursors, content, delete;
// per account; limits refused with a 400 naming the field.
import { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ BATCH_MAX_LINES: '3', BATCH_RUNNER: 'false' });
});
afterAll(async () => {
  await h?.stop();
});

const jsonl = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({ custom_id: `r${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'm' } }),
  ).join('\n');

describe('/v1/files', () => {
  it('uploads, retrieves, lists, reads and deletes a batch input file', async () => {
    const openai = h.client();
    const text = `${jsonl(2)}\n`;
    const file = await openai.files.create({
      file: await toFile(Buffer.from(text), 'in.jsonl'),
      purpose: 'batch',
    });
    expect(file).toMatchObject({
      object: 'file',
      purpose: 'batch',
      filename: 'in.jsonl',
      bytes: text.length,
    });
    expect(file.id).toMatch(/^file-[0-9a-f]{24}$/);
    expect(await openai.files.retrieve(file.id)).toEqual(file);
    expect(await (await openai.files.content(file.id)).text()).toBe(text);

    const second = await openai.files.create({
      file: await toFile(Buffer.from(jsonl(1)), 'b.jsonl'),
      purpose: 'batch',
    });
    const first = await openai.files.list({ limit: 1 });
    expect(first.data.map((f) => f.id)).toEqual([second.id]);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const f of openai.files.list({ limit: 1 })) all.push(f.id);
    expect(all).toEqual([second.id, file.id]);

    // Another account sees none of them.
    const other = await h.newAccount();
    await expect(h.client(other.secret).files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    expect((await h.client(other.secret).files.list()).data).toEqual([]);

    expect(await openai.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    await expect(openai.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(openai.files.content(file.id)).rejects.toMatchObject({ status: 404 });
    // The list goes on after a deleted file.
    expect((await openai.files.list({ after: file.id, order: 'asc' })).data.map((f) => f.id)).toEqual([
      second.id,
    ]);
  });

  it('refuses a file over the line limit, an empty one and another purpose with a 400 naming the field', async () => {
    const openai = h.client();
    await expect(
      openai.files.create({ file: await toFile(Buffer.from(jsonl(4)), 'big.jsonl'), purpose: 'batch' }),
    ).rejects.toMatchObject({ status: 400, param: 'file' });
    await expect(
      openai.files.create({ file: await toFile(Buffer.from('\n\n'), 'e.jsonl'), purpose: 'batch' }),
    ).rejects.toMatchObject({ status: 400, param: 'file' });
    await expect(
      openai.files.create({ file: await toFile(Buffer.from(jsonl(1)), 'a.jsonl'), purpose: 'fine-tune' }),
    ).rejects.toMatchObject({ status: 400, param: 'purpose' });
  });
});
