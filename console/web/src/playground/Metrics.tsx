// A run's measurements (issue 19 items 3 and 5; issue 37 item 2): time to first token and to the
// end, tokens per second, tokens in / cached / out, and the cost — `usage.cost` when the response carries it, else the change of
// the account's balance this run caused (read from the ledger once the call is settled).
import { exactMoney } from '../format.ts';
import type { RunMetrics } from './calls.ts';

export interface Cost {
  amount: string;
  /**
   * `usage`: the response's usage.cost; `balance`: the balance change observed; `prices`: the
   * tokens at the card's prices (a compare column, whose calls settle together).
   */
  source: 'usage' | 'balance' | 'prices';
}

const COST_LABEL = { usage: 'Cost', balance: 'Cost (balance change)', prices: 'Cost (at the card’s prices)' };

const ms = (v: number | null | undefined) => (v == null ? '—' : `${Math.round(v)} ms`);
const n = (v: number | null, digits = 0) => (v === null ? '—' : v.toFixed(digits));

export function Metrics(props: {
  m: RunMetrics | null;
  cost: Cost | null;
  currency: string | null;
  live?: boolean;
}) {
  const { m } = props;
  return (
    <dl className="metrics" data-testid="metrics" aria-live={props.live ? 'off' : 'polite'}>
      <div>
        <dt>Time to first token</dt>
        <dd data-testid="ttft">{ms(m?.ttftMs)}</dd>
      </div>
      <div>
        <dt>Latency (total)</dt>
        <dd data-testid="latency">{ms(m?.totalMs)}</dd>
      </div>
      <div>
        <dt>Tokens per second</dt>
        <dd data-testid="tps">{n(m?.tokensPerSecond ?? null, 1)}</dd>
      </div>
      <div>
        <dt>Tokens in / cached / out</dt>
        <dd data-testid="tokens">
          {n(m?.inputTokens ?? null)} / {n(m?.cachedTokens ?? null)} / {n(m?.outputTokens ?? null)}
        </dd>
      </div>
      <div>
        <dt>{COST_LABEL[props.cost?.source ?? 'usage']}</dt>
        <dd data-testid="cost" data-cost={props.cost?.amount ?? ''} data-source={props.cost?.source ?? ''}>
          {props.cost ? exactMoney(props.cost.amount, props.currency) : '—'}
        </dd>
      </div>
    </dl>
  );
}

/** The cost of an image or video call, one line under its results. */
export function MediaCost({ cost, currency }: { cost: Cost | null; currency: string | null }) {
  if (!cost) return null;
  return (
    <p data-testid="media-cost" data-cost={cost.amount} data-source={cost.source}>
      {COST_LABEL[cost.source]}: {exactMoney(cost.amount, currency)}
    </p>
  );
}
