// What the batch suites share: uploading JSONL lines through the openai SDK, waiting for a batch to
// end, reading its output files, and its charges in the ledger by line index.
import type OpenAI from 'openai';
import { toFile } from 'openai';
import type { Redis } from '../../core/redis/client.ts';
import { type UsageEntry, usageRecords } from '../../core/usage/usage.ts';

export type BatchLine = { custom_id: string; body: Record<string, unknown> };

export async function uploadLines(client: OpenAI, url: string, lines: BatchLine[]) {
  const text = lines.map((l) => JSON.stringify({ ...l, method: 'POST', url })).join('\n');
  return client.files.create({ file: await toFile(Buffer.from(text), 'input.jsonl'), purpose: 'batch' });
}

/** Uploads the lines and creates a 24 h batch of them on the chat completions endpoint. */
export async function createChatBatch(client: OpenAI, lines: BatchLine[]) {
  const file = await uploadLines(client, '/v1/chat/completions', lines);
  return client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
}

/** Polls until the batch is in a final status (a generous bound: the machine is shared). */
export async function batchEnded(client: OpenAI, id: string, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const b = await client.batches.retrieve(id);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    if (Date.now() > end) throw new Error(`batch ${id} still ${b.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the lines hold the answers of three endpoints, read field by field
export type Json = any;

export async function jsonlFile(client: OpenAI, fileId: string | null | undefined): Promise<Json[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

/** The batch's charges in the ledger, by line index. */
export async function batchCharges(
  redis: Redis,
  accountId: string,
  batchId: string,
): Promise<Map<number, UsageEntry[]>> {
  const out = new Map<number, UsageEntry[]>();
  for (const e of await usageRecords(redis, accountId, { count: 10_000 })) {
    if (e.type !== 'charge' || !e.requestId?.startsWith(`${batchId}:`)) continue;
    const i = Number(e.requestId.slice(batchId.length + 1));
    out.set(i, [...(out.get(i) ?? []), e]);
  }
  return out;
}
