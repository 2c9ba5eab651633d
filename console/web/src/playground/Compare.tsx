// Compare (issue 19 item 5, CON-10): 2–6 text models on one prompt, every column streaming at once
// (parallel calls), each with its own time to first token, tokens per second, tokens and cost, live
// while it streams; re-run or stop one column, or all. The set-up (models, prompt, parameters —
// never a key) is the page address, so a copied link reproduces it.
import { useRef, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { CopyButton } from '../copy.tsx';
import { money } from '../format.ts';
import { type Dialect, type RunMetrics, streamReply } from './calls.ts';
import { balanceBeside, balanceChange } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { PromptBox, TextParamFields } from './fields.tsx';
import { type Cost, Metrics } from './Metrics.tsx';
import { fromNano, toNano } from './money.ts';

export const MIN_COLUMNS = 2;
export const MAX_COLUMNS = 6;

export interface CompareSetup {
  models: string[];
  prompt: string;
  system: string;
  temperature: number;
  maxTokens: number;
  dialect: Dialect;
}

/** The set-up as the page address's query (no key, ever). */
export function setupQuery(s: CompareSetup): string {
  const q = new URLSearchParams({ tab: 'compare' });
  for (const m of s.models) q.append('model', m);
  q.set('prompt', s.prompt);
  if (s.system) q.set('system', s.system);
  q.set('temperature', String(s.temperature));
  q.set('max_tokens', String(s.maxTokens));
  q.set('dialect', s.dialect);
  return q.toString();
}

export function setupFrom(q: URLSearchParams, fallback: string[]): CompareSetup {
  const models = q.getAll('model').slice(0, MAX_COLUMNS);
  return {
    models: models.length >= MIN_COLUMNS ? models : fallback.slice(0, MIN_COLUMNS),
    prompt: q.get('prompt') ?? '',
    system: q.get('system') ?? '',
    temperature: Number(q.get('temperature') ?? 0.7),
    maxTokens: Number(q.get('max_tokens') ?? 256),
    dialect: q.get('dialect') === 'messages' ? 'messages' : 'chat',
  };
}

/** A column's cost from the card's prices, when the response does not carry usage.cost. */
function listCost(m: RunMetrics, model: PricedModel | undefined): Cost | null {
  if (!model || m.inputTokens === null || m.outputTokens === null) return null;
  const rate = (v: string | undefined) => toNano(v ?? '0');
  const cached = BigInt(m.cachedTokens ?? 0);
  const fresh = BigInt(m.inputTokens) - cached;
  const p = model.price;
  const nanoPerMillion =
    fresh * rate(p.input) + cached * rate(p.cachedInput ?? p.input) + BigInt(m.outputTokens) * rate(p.output);
  // Round up to a whole nano-unit, as a per-token charge cannot be less than what was used.
  return { amount: fromNano((nanoPerMillion + 999_999n) / 1_000_000n), source: 'prices' };
}

interface Column {
  text: string;
  metrics: RunMetrics | null;
  error: unknown;
  running: boolean;
}

const empty = (): Column => ({ text: '', metrics: null, error: null, running: false });

export function Compare(props: {
  apiBase: string;
  secret: string | null;
  models: PricedModel[];
  setup: CompareSetup;
  onSetup: (s: CompareSetup) => void;
  currency: string | null;
}) {
  const s = props.setup;
  const [columns, setColumns] = useState<Column[]>(() => s.models.map(empty));
  const [total, setTotal] = useState<Cost | null>(null);
  const aborts = useRef<(AbortController | null)[]>([]);
  const update = (i: number, f: (c: Column) => Column) =>
    setColumns((cs) => cs.map((c, j) => (j === i ? f(c) : c)));
  const set = (patch: Partial<CompareSetup>) => props.onSetup({ ...s, ...patch });

  const runColumn = async (i: number) => {
    if (!props.secret || !s.prompt.trim()) return;
    aborts.current[i]?.abort();
    const controller = new AbortController();
    aborts.current[i] = controller;
    update(i, () => ({ ...empty(), running: true }));
    try {
      const m = await streamReply({
        apiBase: props.apiBase,
        secret: props.secret,
        dialect: s.dialect,
        request: {
          model: s.models[i]!,
          system: s.system,
          messages: [{ role: 'user', content: s.prompt }],
          temperature: s.temperature,
          maxTokens: s.maxTokens,
        },
        signal: controller.signal,
        onText: (t) => update(i, (c) => ({ ...c, text: c.text + t })),
        onMetrics: (metrics) => update(i, (c) => ({ ...c, metrics })),
      });
      update(i, (c) => ({ ...c, metrics: m, running: false }));
    } catch (error) {
      update(i, (c) => ({ ...c, error, running: false }));
    } finally {
      if (aborts.current[i] === controller) aborts.current[i] = null;
    }
  };

  const runAll = async () => {
    setColumns(s.models.map(empty));
    setTotal(null);
    const balance = balanceBeside();
    // The first column to end ends the window in which the read is the balance before the run.
    await Promise.all(s.models.map((_, i) => runColumn(i).finally(balance.ended)));
    const before = await balance.before();
    if (before !== null) setTotal(await balanceChange(before));
  };
  const stopAll = () => {
    for (const a of aborts.current) a?.abort();
  };
  const anyRunning = columns.some((c) => c.running);
  const link = `${location.origin}${location.pathname}?${setupQuery(s)}`;

  return (
    <section aria-labelledby="compare-heading">
      <h2 id="compare-heading">Compare models</h2>
      <PromptBox
        label={
          <>
            Prompt <span className="muted small">(Enter runs every column, Esc stops them)</span>
          </>
        }
        rows={3}
        value={s.prompt}
        onChange={(prompt) => set({ prompt })}
        onRun={() => void runAll()}
        onStop={stopAll}
      />
      <div className="grid-params">
        <label>
          System prompt
          <input value={s.system} onChange={(e) => set({ system: e.target.value })} />
        </label>
        <TextParamFields value={s} onChange={set} />
      </div>
      <div className="row">
        <button
          type="button"
          className="primary"
          onClick={() => void runAll()}
          disabled={!props.secret || anyRunning}
        >
          Run all
        </button>
        <button type="button" onClick={stopAll} disabled={!anyRunning}>
          Stop all
        </button>
        <button
          type="button"
          disabled={s.models.length >= MAX_COLUMNS}
          onClick={() => {
            set({ models: [...s.models, props.models[0]?.id ?? s.models[0]!] });
            setColumns((cs) => [...cs, empty()]);
          }}
        >
          Add a column
        </button>
        <CopyButton text={link} label="Copy the link to this set-up" />
        {total && (
          <span data-testid="compare-total">
            All columns: {money(total.amount, props.currency)} (balance change)
          </span>
        )}
      </div>
      <div className="columns" data-testid="columns">
        {s.models.map((id, i) => {
          const c = columns[i] ?? empty();
          const cost = c.metrics?.cost
            ? ({ amount: c.metrics.cost, source: 'usage' } as Cost)
            : c.metrics && !c.running
              ? listCost(
                  c.metrics,
                  props.models.find((m) => m.id === id),
                )
              : null;
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: a column is its position (a model may repeat)
            <article key={i} className="column" data-testid="column" aria-label={`Column ${i + 1}: ${id}`}>
              <label>
                Model
                <select
                  value={id}
                  onChange={(e) => set({ models: s.models.map((m, j) => (j === i ? e.target.value : m)) })}
                >
                  {props.models.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.id}
                    </option>
                  ))}
                  {!props.models.some((m) => m.id === id) && <option value={id}>{id}</option>}
                </select>
              </label>
              <div className="row">
                {c.running ? (
                  <button type="button" onClick={() => aborts.current[i]?.abort()}>
                    Stop
                  </button>
                ) : (
                  <button type="button" onClick={() => void runColumn(i)} disabled={!props.secret}>
                    Re-run
                  </button>
                )}
                {s.models.length > MIN_COLUMNS && !c.running && (
                  <button
                    type="button"
                    onClick={() => {
                      set({ models: s.models.filter((_, j) => j !== i) });
                      setColumns((cs) => cs.filter((_, j) => j !== i));
                    }}
                  >
                    Remove
                  </button>
                )}
              </div>
              <ErrorBox error={c.error} />
              <div className="reply" data-testid="column-reply" data-done={!c.running && c.metrics !== null}>
                {c.text}
              </div>
              <Metrics m={c.metrics} cost={cost} currency={props.currency} live />
            </article>
          );
        })}
      </div>
    </section>
  );
}
