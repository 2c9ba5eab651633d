// A batch's money per line and its end (docs/batches.md "Billing"):
// - settleLine bills one written result, once, through billing (../billing/batch-money.ts): a
//   settlement of the batch's hold under the line's own id (batch id + line index), so a runner
//   that retries it after a crash charges nothing more; then marks it billed. Failed lines cost 0
//   and are never settled.
// - finalizeBatch, once no line runs: every written result billed (those a dead runner left
//   unbilled), the output and error files written (ids made from the batch's, so finalizing again
//   writes the same files), the unused hold released, the batch moved to its final status.
import { Buffer } from 'node:buffer';
import { endpointOf, speaksMessages } from '../../core/endpoints.ts';
import type { BatchFiles } from '../../core/jobs/batch-files.ts';
import type { Batches } from '../../core/jobs/batches.ts';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import type { ProxyContext } from '../context.ts';
import { linesKey, type StoredLine } from './keys.ts';
import {
  anthropicLine,
  anthropicUnrunLine,
  isSuccess,
  type LineResult,
  lineId,
  openAiLine,
  openAiUnrunLine,
  type Unrun,
} from './output.ts';

interface MoneyDeps {
  ctx: ProxyContext;
  batches: Batches;
}

export async function settleLine(
  d: MoneyDeps,
  l: { accountId: string; id: string; record: RecordFields; index: number; result: LineResult },
): Promise<void> {
  const { accountId, id, index, result } = l;
  if (result.cost > 0 && result.usage !== null)
    await d.ctx.billing.batches.settleLine({
      accountId,
      batchId: id,
      index,
      cost: result.cost,
      usage: result.usage,
      keyId: l.record.key_id ?? null,
      model: l.record.model ?? '',
      kind: endpointOf(l.record.endpoint)?.kind ?? 'chat',
      currency: l.record.currency ?? '',
    });
  await d.batches.markSettled(accountId, id, index);
}

export interface FinalizeDeps extends MoneyDeps {
  files: BatchFiles;
  store: ObjectStore;
}

/** The output file's id, made from the batch's (so a second finalizing writes the same file). */
export const outputFileId = (batchId: string, kind: 'output' | 'error') =>
  `file-${lineId(batchId, kind === 'output' ? -1 : -2).slice('batch_req_'.length)}`;

export async function finalizeBatch(
  d: FinalizeDeps,
  b: {
    accountId: string;
    id: string;
    record: RecordFields;
    lines: StoredLine[];
    ending: 'completed' | Unrun;
  },
): Promise<void> {
  const { accountId, id, record, lines, ending } = b;
  const now = Math.floor(Date.now() / 1000);
  if (ending === 'completed')
    await d.batches.move(accountId, id, ['in_progress', 'finalizing'], 'finalizing', {
      finalizing_at: record.finalizing_at || now,
    });
  const results = await d.batches.results(accountId, id);
  const settled = await d.batches.settled(accountId, id);
  for (const [index, json] of results)
    if (!settled.has(index)) await settleLine(d, { accountId, id, record, index, result: JSON.parse(json) });

  const anthropic = speaksMessages(record.endpoint);
  const out: string[] = [];
  const err: string[] = [];
  let unrun = 0;
  for (let i = 0; i < lines.length; i++) {
    const json = results.get(i);
    if (json === undefined) {
      unrun++;
      const line = ending === 'completed' ? 'cancelled' : ending;
      (anthropic ? out : err).push(
        anthropic
          ? anthropicUnrunLine(lines[i]!.customId, line)
          : openAiUnrunLine(id, i, lines[i]!.customId, line),
      );
      continue;
    }
    const r = JSON.parse(json) as LineResult;
    if (anthropic) out.push(anthropicLine(r));
    else (isSuccess(r) ? out : err).push(openAiLine(id, i, r));
  }
  const fields: Record<string, string | number> = {};
  if (out.length > 0 || anthropic) fields.output_file_id = await writeFile(d, accountId, id, 'output', out);
  if (err.length > 0) fields.error_file_id = await writeFile(d, accountId, id, 'error', err);
  if (ending !== 'completed') fields[`unrun_${ending}`] = unrun;
  await d.ctx.billing.batches.release(accountId, id);
  const at = ending === 'completed' ? 'completed_at' : ending === 'expired' ? 'expired_at' : 'cancelled_at';
  const moved = await d.batches.move(accountId, id, ['in_progress', 'finalizing', 'cancelling'], ending, {
    ...fields,
    [at]: now,
    ended_at: now,
  });
  if (moved) {
    await d.batches.dropLines(accountId, id);
    await d.store.delete(linesKey(accountId, id));
  }
}

async function writeFile(
  d: FinalizeDeps,
  accountId: string,
  batchId: string,
  kind: 'output' | 'error',
  lines: string[],
): Promise<string> {
  const body = Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  const id = outputFileId(batchId, kind);
  await d.files.create(accountId, {
    id,
    filename: `${batchId}_${kind}.jsonl`,
    purpose: 'batch_output',
    bytes: body.length,
    body,
  });
  return id;
}
