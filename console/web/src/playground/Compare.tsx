// Compare (issue 19 item 5, CON-10; issue 37 item 4): 2–6 of the account's usable text models on
// 1–5 prompts, every column streaming at once (parallel calls) with its own model, dialect and
// parameters; a column asks its prompts one after another (six columns of five prompts at once
// would meet a key's concurrency limit). Each result — a column's answer to one prompt — has its own
// time to first token, latency, tokens per second, tokens and cost, live while it streams, and the
// results are laid out in one row per prompt; re-run or stop one column, or all. The set-up is the
// page address (./compare-setup.ts), so a copied link reproduces it.
import { useCallback, useRef, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { CopyButton } from '../copy.tsx';
import { exactMoney } from '../format.ts';
import { ComparePrompts } from './ComparePrompts.tsx';
import { type ChatRequest, type RunMetrics, streamReply } from './calls.ts';
import {
  type CompareColumn,
  type CompareSetup,
  MAX_COLUMNS,
  MIN_COLUMNS,
  nextModel,
  setupQuery,
} from './compare-setup.ts';
import { balanceBeside, balanceChange } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { Choice } from './fields.tsx';
import { type Cost, Metrics } from './Metrics.tsx';
import { fromNano, toNano } from './money.ts';
import { DialectField, ParamFields } from './ParamFields.tsx';
import { DEFAULT_PARAMS, limitsFor, withinLimits } from './params.ts';
import { Reply } from './Reply.tsx';
import { ViewCode } from './ViewCode.tsx';

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

/** One column's answer to one prompt. */
interface Cell {
  text: string;
  metrics: RunMetrics | null;
  error: unknown;
  running: boolean;
}

const empty = (): Cell => ({ text: '', metrics: null, error: null, running: false });
/** A column's results: one cell per prompt. */
const emptyColumn = (prompts: number): Cell[] => Array.from({ length: prompts }, empty);

/** A column's dialect and parameters, folded away until wanted (six columns of fields would bury the replies). */
function ColumnParams(props: {
  column: CompareColumn;
  model: PricedModel | undefined;
  onChange: (c: CompareColumn) => void;
}) {
  const c = props.column;
  const limits = limitsFor(props.model, c.dialect);
  const params = withinLimits(c.params, limits);
  return (
    <details className="column-params">
      <summary>
        Parameters{' '}
        <span className="muted small">
          {c.dialect === 'chat' ? 'chat' : 'Messages'}, temperature {params.temperature}, max{' '}
          {params.maxTokens}
        </span>
      </summary>
      <DialectField value={c.dialect} onChange={(dialect) => props.onChange({ ...c, dialect })} />
      <ParamFields
        value={params}
        limits={limits}
        onChange={(p) => props.onChange({ ...c, params: { ...params, ...p } })}
      />
    </details>
  );
}

/** One column's answer to one prompt: what it said and its own metrics and cost. */
function Result(props: {
  cell: Cell;
  /** Which prompt (several prompts only). */
  label: string | null;
  model: PricedModel | undefined;
  currency: string | null;
}) {
  const c = props.cell;
  const cost = c.metrics?.cost
    ? ({ amount: c.metrics.cost, source: 'usage' } as Cost)
    : c.metrics && !c.running
      ? listCost(c.metrics, props.model)
      : null;
  return (
    <div className="result" data-testid="result">
      {props.label !== null && (
        <p className="muted small result-prompt" title={props.label}>
          {props.label}
        </p>
      )}
      <ErrorBox error={c.error} />
      <div className="reply" data-testid="column-reply" data-done={!c.running && c.metrics !== null}>
        <Reply text={c.text} />
      </div>
      <Metrics m={c.metrics} cost={cost} currency={props.currency} live />
    </div>
  );
}

/**
 * Scrolls the first prompt's results to the top of the window when they are not on screen or start
 * in its lower two thirds (too low to read a reply), so a run is seen starting; results already
 * high enough in view are left where they are.
 */
function resultsInView(columns: HTMLElement | null, controls: HTMLElement | null) {
  const first = columns?.querySelector<HTMLElement>('[data-testid="result"]');
  if (!first) return;
  const top = first.getBoundingClientRect().top;
  if (top >= 0 && top < window.innerHeight / 3) return;
  // Under the Run all / Stop all row, which sticks to the top of the window once scrolled to.
  first.style.scrollMarginTop = `${(controls?.offsetHeight ?? 0) + 8}px`;
  first.scrollIntoView({ block: 'start' });
}

export function Compare(props: {
  apiBase: string;
  secret: string | null;
  /** The account's usable text models: the only ones a column offers. */
  models: PricedModel[];
  setup: CompareSetup;
  onSetup: (s: CompareSetup) => void;
  currency: string | null;
}) {
  const s = props.setup;
  const [columns, setColumns] = useState<Cell[][]>(() => s.columns.map(() => emptyColumn(s.prompts.length)));
  const [total, setTotal] = useState<Cost | null>(null);
  const aborts = useRef<(AbortController | null)[]>([]);
  const results = useRef<HTMLDivElement>(null);
  const controls = useRef<HTMLDivElement>(null);
  const update = (i: number, k: number, f: (c: Cell) => Cell) =>
    setColumns((cs) => cs.map((col, j) => (j === i ? col.map((c, l) => (l === k ? f(c) : c)) : col)));
  const set = (patch: Partial<CompareSetup>) => props.onSetup({ ...s, ...patch, dropped: [] });
  const setColumn = (i: number, c: CompareColumn) =>
    set({ columns: s.columns.map((x, j) => (j === i ? c : x)) });
  const modelOf = (id: string) => props.models.find((m) => m.id === id);

  /** A column's call for one prompt as it is sent (and as View code shows it, for the first prompt). */
  const requestOf = (col: CompareColumn, k = 0): ChatRequest => ({
    model: col.model,
    system: s.system,
    messages: [{ role: 'user', content: s.prompts[k] ?? '' }],
    params: withinLimits(col.params, limitsFor(modelOf(col.model), col.dialect)),
  });
  const [codeOf, setCodeOf] = useState<number | null>(null);
  const closeCode = useCallback(() => setCodeOf(null), []);

  /** One prompt in one column; false when the call failed or was stopped (the column stops there). */
  const runCell = async (i: number, k: number, col: CompareColumn, secret: string, signal: AbortSignal) => {
    update(i, k, () => ({ ...empty(), running: true }));
    try {
      const m = await streamReply({
        apiBase: props.apiBase,
        secret,
        dialect: col.dialect,
        request: requestOf(col, k),
        signal,
        onText: (t) => update(i, k, (c) => ({ ...c, text: c.text + t })),
        onMetrics: (metrics) => update(i, k, (c) => ({ ...c, metrics })),
      });
      update(i, k, (c) => ({ ...c, metrics: m, running: false }));
      return true;
    } catch (error) {
      update(i, k, (c) => ({ ...c, error, running: false }));
      return false;
    }
  };

  /** Every prompt in column i, one after another (an empty prompt is skipped). */
  const runColumn = async (i: number) => {
    const col = s.columns[i];
    if (!props.secret || !col || !s.prompts.some((p) => p.trim())) return;
    aborts.current[i]?.abort();
    const controller = new AbortController();
    aborts.current[i] = controller;
    setColumns((cs) => cs.map((c, j) => (j === i ? emptyColumn(s.prompts.length) : c)));
    try {
      for (const [k, prompt] of s.prompts.entries()) {
        if (!prompt.trim()) continue;
        if (controller.signal.aborted) break;
        if (!(await runCell(i, k, col, props.secret, controller.signal))) break;
      }
    } finally {
      if (aborts.current[i] === controller) aborts.current[i] = null;
    }
  };

  const runAll = async () => {
    setColumns(s.columns.map(() => emptyColumn(s.prompts.length)));
    setTotal(null);
    // The results start under the prompts and every column's settings, below the fold: without
    // this, Run all seemed to do nothing (issue 48 item 10).
    requestAnimationFrame(() => resultsInView(results.current, controls.current));
    const balance = balanceBeside();
    // The first column to end ends the window in which the read is the balance before the run.
    await Promise.all(s.columns.map((_, i) => runColumn(i).finally(balance.ended)));
    const before = await balance.before();
    if (before !== null) setTotal(await balanceChange(before));
  };
  const stopAll = () => {
    for (const a of aborts.current) a?.abort();
  };
  const anyRunning = columns.some((col) => col.some((c) => c.running));
  const link = `${location.origin}${location.pathname}?${setupQuery(s)}`;
  const usable = props.models.map((m) => m.id);

  return (
    <section aria-labelledby="compare-heading">
      <h2 id="compare-heading">Compare models</h2>
      {s.dropped && s.dropped.length > 0 && (
        <p className="notice" data-testid="compare-dropped">
          Left out, as this account cannot use {s.dropped.length === 1 ? 'it' : 'them'}:{' '}
          {s.dropped.join(', ')}.
        </p>
      )}
      <ComparePrompts
        prompts={s.prompts}
        onChange={(prompts) => {
          set({ prompts });
          // A prompt added or removed: the results are laid out by prompt, so they start again.
          if (prompts.length !== s.prompts.length)
            setColumns(s.columns.map(() => emptyColumn(prompts.length)));
        }}
        onRun={() => void runAll()}
        onStop={stopAll}
      />
      <label>
        System prompt
        <input value={s.system} onChange={(e) => set({ system: e.target.value })} />
      </label>
      {/* Sticky: with the results scrolled into view, Stop all stays at hand. */}
      <div className="row compare-controls" ref={controls}>
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
          disabled={s.columns.length >= MAX_COLUMNS}
          onClick={() => {
            const last = s.columns[s.columns.length - 1];
            const model = nextModel(
              s.columns.map((c) => c.model),
              usable,
            );
            // The new column starts with the last one's dialect and parameters: a comparison varies one thing.
            set({
              columns: [
                ...s.columns,
                { model, dialect: last?.dialect ?? 'chat', params: last?.params ?? DEFAULT_PARAMS },
              ],
            });
            setColumns((cs) => [...cs, emptyColumn(s.prompts.length)]);
          }}
        >
          Add a column
        </button>
        <CopyButton text={link} label="Copy the link to this set-up" />
        {total && (
          <span data-testid="compare-total">
            All columns: {exactMoney(total.amount, props.currency)} (balance change)
          </span>
        )}
      </div>
      {/* data-prompts sets each column's row span, so a prompt's results line up across columns (subgrid). */}
      <div className="columns" data-testid="columns" data-prompts={s.prompts.length} ref={results}>
        {s.columns.map((col, i) => {
          const cells = columns[i] ?? emptyColumn(s.prompts.length);
          const running = cells.some((c) => c.running);
          return (
            <article
              // biome-ignore lint/suspicious/noArrayIndexKey: a column is its position (a model may repeat)
              key={i}
              className="column"
              data-testid="column"
              aria-label={`Column ${i + 1}: ${col.model}`}
            >
              <div className="column-head">
                <Choice
                  label="Model"
                  value={col.model}
                  options={usable}
                  onChange={(model) => setColumn(i, { ...col, model })}
                />
                <ColumnParams column={col} model={modelOf(col.model)} onChange={(x) => setColumn(i, x)} />
                <div className="row">
                  {running ? (
                    <button type="button" onClick={() => aborts.current[i]?.abort()}>
                      Stop
                    </button>
                  ) : (
                    <button type="button" onClick={() => void runColumn(i)} disabled={!props.secret}>
                      Re-run
                    </button>
                  )}
                  <button type="button" onClick={() => setCodeOf(i)}>
                    View code
                  </button>
                  {s.columns.length > MIN_COLUMNS && !running && (
                    <button
                      type="button"
                      onClick={() => {
                        set({ columns: s.columns.filter((_, j) => j !== i) });
                        setColumns((cs) => cs.filter((_, j) => j !== i));
                      }}
                    >
                      Remove
                    </button>
                  )}
                </div>
              </div>
              {s.prompts.map((prompt, k) => (
                <Result
                  // biome-ignore lint/suspicious/noArrayIndexKey: a result is its prompt's position
                  key={k}
                  cell={cells[k] ?? empty()}
                  label={s.prompts.length > 1 ? `Prompt ${k + 1}: ${prompt}` : null}
                  model={modelOf(col.model)}
                  currency={props.currency}
                />
              ))}
            </article>
          );
        })}
      </div>
      {codeOf !== null && s.columns[codeOf] && (
        <ViewCode
          apiBase={props.apiBase}
          dialect={s.columns[codeOf].dialect}
          request={requestOf(s.columns[codeOf])}
          onClose={closeCode}
        />
      )}
    </section>
  );
}
