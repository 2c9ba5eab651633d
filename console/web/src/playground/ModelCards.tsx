// The Playground's model cards (CON-8, CON-9): each model of the account's catalogue view with its
// canonical id, kind, context and exact prices in the account currency — Input, Cached, Output per
// 1M tokens for text, per generation for images, per second for video — and its ribbon: `Coming
// Soon` (shown, not runnable) or `By Invitation` (runnable once granted, else how to ask). Also
// (issue 37 item 6) what it can do — tools, vision, reasoning, edits — its output limit, a sort by
// price or context, ids broken only between their parts, and cards of one height.
import { useState } from 'react';
import type { PricedModel } from '../api.ts';
import { count, exactMoney } from '../format.ts';

export const KIND_LABEL: Record<string, string> = {
  chat: 'Text',
  embedding: 'Embeddings',
  image: 'Image',
  video: 'Video',
};

const RIBBON: Record<string, string> = { comingSoon: 'Coming Soon', inviteOnly: 'By Invitation' };

const CAPABILITY_LABEL: Record<keyof PricedModel['capabilities'], string> = {
  tools: 'Tools',
  vision: 'Vision',
  reasoning: 'Reasoning',
  edit: 'Image edits',
  imageToVideo: 'Image to video',
};

export const SORTS = {
  name: 'Name',
  price: 'Price, lowest first',
  context: 'Context, largest first',
} as const;
export type Sort = keyof typeof SORTS;

/** The price a card is sorted by: input per 1M for text, per generation, per second. */
const priceKey = (m: PricedModel) =>
  Number(m.price.input ?? m.price.perImage ?? m.price.perSecond ?? Number.NaN);

/** Cards in `sort`'s order; a model without the number sorted on goes last, ties by name. */
export function sorted(models: readonly PricedModel[], sort: Sort): PricedModel[] {
  const key = (m: PricedModel) =>
    sort === 'price' ? priceKey(m) : sort === 'context' ? -(m.contextLength ?? Number.NaN) : 0;
  return [...models].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    if (Number.isNaN(x) !== Number.isNaN(y)) return Number.isNaN(x) ? 1 : -1;
    return (Number.isNaN(x) ? 0 : x - y) || a.id.localeCompare(b.id);
  });
}

/** An id that may break after a `/` (and, as any text, after a `-`), never inside a part. */
function ModelId({ id }: { id: string }) {
  const parts = id.split('/');
  return (
    <code className="model-id">
      {parts.map((p, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one id, in order
        <span key={i}>
          {p}
          {i < parts.length - 1 && (
            <>
              /<wbr />
            </>
          )}
        </span>
      ))}
    </code>
  );
}

function PriceRows({ m, currency }: { m: PricedModel; currency: string | null }) {
  const p = m.price;
  const row = (label: string, value: string | undefined, unit: string) => (
    <div key={label}>
      <dt>{label}</dt>
      <dd data-testid={`price-${label.toLowerCase().replace(/\W+/g, '-')}`}>
        {value === undefined ? '—' : `${exactMoney(value, currency)}${unit}`}
      </dd>
    </div>
  );
  if (m.kind === 'image') return row('Per generation', p.perImage, '');
  if (m.kind === 'video') return row('Per second', p.perSecond, '');
  return (
    <>
      {row('Input', p.input, ' / 1M')}
      {m.kind === 'chat' && row('Cached', p.cachedInput ?? p.input, ' / 1M')}
      {m.kind === 'chat' && row('Output', p.output, ' / 1M')}
    </>
  );
}

export function ModelCards(props: {
  models: PricedModel[] | null;
  currency: string | null;
  onTry: (m: PricedModel) => void;
}) {
  const [kind, setKind] = useState('all');
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<Sort>('name');
  const shown = sorted(
    (props.models ?? []).filter(
      (m) => (kind === 'all' || m.kind === kind) && m.id.toLowerCase().includes(search.trim().toLowerCase()),
    ),
    sort,
  );
  return (
    <section aria-labelledby="models-heading">
      <h2 id="models-heading">Models</h2>
      <div className="row filters">
        <label className="inline">
          Kind{' '}
          <select value={kind} onChange={(e) => setKind(e.target.value)}>
            <option value="all">All</option>
            {Object.entries(KIND_LABEL).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          Search{' '}
          <input
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder="Model name"
          />
        </label>
        <label className="inline">
          Sort{' '}
          <select value={sort} onChange={(e) => setSort(e.target.value as Sort)}>
            {Object.entries(SORTS).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </label>
        {props.currency && (
          <span className="muted small">Prices in {props.currency}, exactly as charged.</span>
        )}
      </div>
      <ul className="cards" aria-label="Models">
        {shown.map((m) => {
          const ribbon = RIBBON[m.availability];
          return (
            <li key={m.id} className="card" data-model={m.id} aria-label={m.id}>
              {ribbon && (
                <span className={`ribbon ${m.availability}`} data-testid="ribbon">
                  {ribbon}
                </span>
              )}
              <h3>
                <ModelId id={m.id} />
              </h3>
              <ul className="capabilities" aria-label="Capabilities">
                {Object.entries(CAPABILITY_LABEL)
                  .filter(([c]) => m.capabilities[c as keyof PricedModel['capabilities']])
                  .map(([c, label]) => (
                    <li key={c} className="badge" data-capability={c}>
                      {label}
                    </li>
                  ))}
              </ul>
              <dl className="prices">
                <div>
                  <dt>Kind</dt>
                  <dd>{KIND_LABEL[m.kind] ?? m.kind}</dd>
                </div>
                {m.kind !== 'image' && m.kind !== 'video' && (
                  <div>
                    <dt>Context</dt>
                    <dd data-testid="price-context">
                      {m.contextLength === null ? '—' : count(m.contextLength)}
                    </dd>
                  </div>
                )}
                {m.kind === 'chat' && (
                  <div>
                    <dt>Max output</dt>
                    <dd data-testid="price-max-output">
                      {m.maxOutputTokens === null ? '—' : count(m.maxOutputTokens)}
                    </dd>
                  </div>
                )}
                <PriceRows m={m} currency={props.currency} />
              </dl>
              <div className="card-foot">
                {m.callable && m.kind !== 'embedding' ? (
                  <button type="button" onClick={() => props.onTry(m)} aria-label={`Try ${m.id}`}>
                    Try
                  </button>
                ) : m.availability === 'comingSoon' ? (
                  <p className="muted small">Not runnable yet.</p>
                ) : m.availability === 'inviteOnly' && !m.callable ? (
                  <p className="muted small">
                    By invitation: ask your modelplane contact to grant this account access; it becomes
                    runnable here as soon as they do.
                  </p>
                ) : (
                  <p className="muted small">Embeddings: call it through the API.</p>
                )}
              </div>
            </li>
          );
        })}
      </ul>
      {props.models !== null && shown.length === 0 && <p>No model matches.</p>}
    </section>
  );
}
