// vLLM's KV-event payload (vllm/distributed/kv_events.py), decoded: a msgpack EventBatch whose
// events are msgspec structs tagged by class name. Current vLLM encodes structs as maps
// ({type: "BlockStored", block_hashes, ...}); earlier releases (and TensorRT-LLM's port) as arrays
// (["BlockStored", block_hashes, parent, token_ids, block_size, ...]) — both are read, as Dynamo's
// decoder does. A block hash is an int or bytes (sha256) depending on the engine's hash function;
// both become a string key. Anything else in a batch is skipped, not fatal: an engine newer than
// us may add event types.
import { decode } from '@msgpack/msgpack';

export type EngineHash = string;

export type KvEvent =
  | {
      type: 'BlockStored';
      hashes: EngineHash[];
      parent: EngineHash | null;
      tokenIds: number[];
      blockSize: number;
      /** LoRA adapter the blocks belong to: its blocks never match the base model's. */
      lora: string | null;
      medium: string | null;
    }
  | { type: 'BlockRemoved'; hashes: EngineHash[]; medium: string | null }
  | { type: 'AllBlocksCleared' };

export function decodeEventBatch(payload: Uint8Array): KvEvent[] {
  const batch = decode(payload, { useBigInt64: true });
  const events = Array.isArray(batch) ? batch[1] : (batch as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) throw new Error('not a KV EventBatch');
  const out: KvEvent[] = [];
  for (const raw of events) {
    const e = readEvent(raw);
    if (e !== null) out.push(e);
  }
  return out;
}

function readEvent(raw: unknown): KvEvent | null {
  const fields = Array.isArray(raw) ? arrayFields(raw) : (raw as Record<string, unknown> | null);
  if (fields === null || typeof fields !== 'object') return null;
  switch (fields.type) {
    case 'BlockStored':
      return {
        type: 'BlockStored',
        hashes: hashList(fields.block_hashes),
        parent: fields.parent_block_hash == null ? null : hashKey(fields.parent_block_hash),
        tokenIds: Array.isArray(fields.token_ids) ? fields.token_ids.map(Number) : [],
        blockSize: Number(fields.block_size),
        lora: typeof fields.lora_name === 'string' ? fields.lora_name : null,
        medium: typeof fields.medium === 'string' ? fields.medium : null,
      };
    case 'BlockRemoved':
      return {
        type: 'BlockRemoved',
        hashes: hashList(fields.block_hashes),
        medium: typeof fields.medium === 'string' ? fields.medium : null,
      };
    case 'AllBlocksCleared':
      return { type: 'AllBlocksCleared' };
    default:
      return null;
  }
}

/** The array form's positions (msgspec array_like=True): tag, then the fields in declared order. */
function arrayFields(a: unknown[]): Record<string, unknown> {
  switch (a[0]) {
    case 'BlockStored':
      return {
        type: a[0],
        block_hashes: a[1],
        parent_block_hash: a[2],
        token_ids: a[3],
        block_size: a[4],
        medium: a[6],
        lora_name: a[7],
      };
    case 'BlockRemoved':
      return { type: a[0], block_hashes: a[1], medium: a[2] };
    default:
      return { type: a[0] };
  }
}

function hashList(v: unknown): EngineHash[] {
  return Array.isArray(v) ? v.map(hashKey) : [];
}

function hashKey(v: unknown): EngineHash {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  return String(v);
}
