// A Compare set-up (issue 19 item 5; issue 37 item 4): 1–5 prompts, the system prompt and 2–6
// columns, each with its own model, dialect and parameters — every prompt is run in every column;
// it is the page address, so a copied link reproduces it (never a key). Only models the account can
// use make columns. Pure.
import type { Dialect } from './calls.ts';
import { DEFAULT_PARAMS, type SamplingParams } from './params.ts';

export const MIN_COLUMNS = 2;
export const MAX_COLUMNS = 6;
/** Prompts run in every column: five of six columns is thirty calls, enough to judge by. */
export const MAX_PROMPTS = 5;

/** A column: its model, dialect and parameters (each column its own, issue 37 item 4). */
export interface CompareColumn {
  model: string;
  dialect: Dialect;
  params: SamplingParams;
}

export interface CompareSetup {
  /** At least one; each is asked in every column, on its own (not as a conversation). */
  prompts: string[];
  system: string;
  columns: CompareColumn[];
  /** Models of the link the account cannot use: left out, and said so. Not part of the address. */
  dropped?: string[];
}

/** The set-up as the page address's query (no key, ever): `model` and `column` once per column, `prompt` once per prompt. */
export function setupQuery(s: CompareSetup): string {
  const q = new URLSearchParams({ tab: 'compare' });
  for (const c of s.columns) q.append('model', c.model);
  for (const c of s.columns) q.append('column', JSON.stringify({ dialect: c.dialect, ...c.params }));
  for (const p of s.prompts) q.append('prompt', p);
  if (s.system) q.set('system', s.system);
  return q.toString();
}

function columnFrom(text: string | undefined, model: string): CompareColumn {
  let v: Partial<SamplingParams> & { dialect?: string } = {};
  try {
    v = text ? (JSON.parse(text) as typeof v) : {};
  } catch {
    // a mangled link: the defaults
  }
  const { dialect, ...params } = v;
  return {
    model,
    dialect: dialect === 'messages' ? 'messages' : 'chat',
    params: { ...DEFAULT_PARAMS, ...params },
  };
}

/** The first of `usable` not already shown (the first at all when every one is). */
export const nextModel = (shown: readonly string[], usable: readonly string[]) =>
  usable.find((m) => !shown.includes(m)) ?? usable[0] ?? '';

/**
 * The set-up of a page address. Only models the account can use make columns (issue 37 item 4: a
 * link's model the account cannot call was a 404 in its column); too few are made up with other
 * usable ones.
 */
export function setupFrom(q: URLSearchParams, usable: readonly string[]): CompareSetup {
  const asked = q.getAll('model').slice(0, MAX_COLUMNS);
  const params = q.getAll('column');
  const columns = asked
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => usable.includes(m))
    .map(({ m, i }) => columnFrom(params[i], m));
  while (columns.length < Math.min(MIN_COLUMNS, usable.length))
    columns.push(
      columnFrom(
        undefined,
        nextModel(
          columns.map((c) => c.model),
          usable,
        ),
      ),
    );
  const prompts = q.getAll('prompt').slice(0, MAX_PROMPTS);
  return {
    // A link from before prompts were several has one, read the same.
    prompts: prompts.length > 0 ? prompts : [''],
    system: q.get('system') ?? '',
    columns,
    dropped: asked.filter((m) => !usable.includes(m)),
  };
}
