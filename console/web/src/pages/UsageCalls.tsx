// The usage page's calls one by one (issue 23 item 5), from the durable journal: each call of the
// range and key, newest first, 'Load more' for older ones; and a call looked up by its request id
// with everything it moved (charge, void of its hold, refunds). Without a journal (no DATABASE_URL)
// the server says so and this says it instead of a table.
import { useEffect, useState } from 'react';
import { ApiError, api, type CallTransfer } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { count, exactMoney } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { navigate, useLocation } from '../router.tsx';
import { duration, UsageRefused } from './UsageRefused.tsx';

const PAGE = 50;
/** Said without a journal (the server's 404 for these routes says the same). */
const NO_JOURNAL =
  'Usage history call by call needs the durable journal: this console runs without one (DATABASE_URL is not set). The daily figures above are complete.';
/**
 * Seven columns, so the table fits the page at desktop width with the amount in view (issue 37 item 7:
 * thirteen scrolled sideways); a call's every figure is in its dialog (RequestLookup).
 */
const HEAD = ['Time (UTC)', 'Request id', 'Key', 'Model', 'Usage', 'Result', 'Charged'] as const;

/** The key as it is now: a deleted key, or a call made with a secret since rotated, says so. */
function keyLabel(t: CallTransfer): string {
  if (t.keyId === null) return '—';
  const name = t.keyName ?? t.keyId;
  return t.keyState === 'deleted'
    ? `${name} (deleted)`
    : t.keyState === 'rotated'
      ? `${name} (rotated since)`
      : name;
}

/** To the second, in UTC like the rest of the page: calls a second apart are told apart. */
const utcSecond = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;

const n = (v: number | null) => (v === null ? '—' : count(v));

/** What the call used, in one cell: tokens (in · cached · out), images or video seconds; a refund or void says so. */
function usageLabel(t: CallTransfer): string {
  const used = [
    t.inputTokens !== null || t.outputTokens !== null
      ? `${n(t.inputTokens)} in · ${n(t.cachedTokens)} cached · ${n(t.outputTokens)} out`
      : '',
    t.images !== null ? `${n(t.images)} image${t.images === 1 ? '' : 's'}` : '',
    t.videoSeconds !== null ? `${n(t.videoSeconds)} s of video` : '',
  ].filter(Boolean);
  if (t.type === 'charge') return used.join(' · ') || '—';
  return used.length > 0 ? `${typeLabel(t)}: ${used.join(' · ')}` : typeLabel(t);
}

/** What the transfer did, in words: refunds and voids give money back. */
function typeLabel(t: CallTransfer): string {
  if (t.type === 'void')
    return `hold of ${exactMoney(t.amount, null)} given back${t.reason ? ` (${t.reason})` : ''}`;
  return t.type;
}

/** How the call ended: its status and finish reason, then how long it took (a stream: to its first token too). */
function Result({ t }: { t: CallTransfer }) {
  if (t.type !== 'charge' || t.status == null) return <>—</>;
  const ok = t.status < 400;
  return (
    <>
      <span className={ok ? undefined : 'error'}>
        {t.status === 499 ? 'client left' : t.status}
        {t.finishReason ? ` · ${t.finishReason}` : ''}
      </span>
      <br />
      <span className="muted small">
        {duration(t.latencyMs ?? null)}
        {t.ttftMs != null ? ` · first token ${duration(t.ttftMs)}` : ''}
      </span>
    </>
  );
}

/** What it did to the balance: a refund gives back, a void moves nothing (the hold was never charged). */
const charged = (t: CallTransfer) =>
  t.type === 'charge'
    ? exactMoney(t.amount, null)
    : t.type === 'refund'
      ? `−${exactMoney(t.amount, null)}`
      : '—';

function CallRow({ t, lookup }: { t: CallTransfer; lookup?: (requestId: string) => void }) {
  return (
    <tr data-testid="call-row" data-type={t.type}>
      <td className="when">{utcSecond(t.at)}</td>
      <td className="request">
        {t.requestId && lookup ? (
          <button type="button" className="link" onClick={() => lookup(t.requestId!)}>
            {t.requestId}
          </button>
        ) : (
          (t.requestId ?? '—')
        )}
      </td>
      <td data-testid="call-key">{keyLabel(t)}</td>
      <td className="model">{t.model ?? '—'}</td>
      <td data-testid="call-usage">{usageLabel(t)}</td>
      <td data-testid="call-result">
        <Result t={t} />
      </td>
      <td data-testid="call-amount" className="num">
        {charged(t)}
        {t.currency ? ` ${t.currency}` : ''}
      </td>
    </tr>
  );
}

export function UsageCalls(props: {
  from: number;
  to: number;
  keyId: string;
  valid: boolean;
  /** Me's usageHistory: false without a journal, and the section says so instead of asking. */
  available: boolean;
}) {
  const { query } = useLocation();
  const looked = query.get('request') ?? '';
  const [calls, setCalls] = useState<CallTransfer[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [unavailable, setUnavailable] = useState(props.available ? '' : NO_JOURNAL);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(false);
  const [requestId, setRequestId] = useState(looked);
  /** Charged calls (the journal), or those refused at the door (never charged). */
  const [show, setShow] = useState<'charged' | 'refused'>('charged');
  const range = { from: props.from, to: props.to + 1, ...(props.keyId ? { keyId: props.keyId } : {}) };

  /** The journal is missing (404 on the list): the page says why there is no table. */
  const refused = (err: unknown) => {
    if (err instanceof ApiError && err.status === 404 && err.param === null) setUnavailable(err.message);
    else setError((err as Error).message);
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: range is derived from these values
  useEffect(() => {
    if (!props.valid || !props.available) return;
    setCalls(null);
    setNext(null);
    setError('');
    void api
      .calls({ ...range, limit: PAGE })
      .then((r) => {
        setCalls(r.data);
        setNext(r.nextCursor);
      })
      .catch(refused);
  }, [props.from, props.to, props.keyId, props.valid, props.available]);

  const more = async () => {
    if (next === null) return;
    setLoading(true);
    try {
      const r = await api.calls({ ...range, limit: PAGE, cursor: next });
      setCalls((c) => [...(c ?? []), ...r.data]);
      setNext(r.nextCursor);
    } catch (err) {
      refused(err);
    } finally {
      setLoading(false);
    }
  };

  const lookup = (id: string) => {
    const q = new URLSearchParams(location.search);
    if (id) q.set('request', id);
    else q.delete('request');
    setRequestId(id);
    const qs = q.toString();
    navigate(`/usage${qs ? `?${qs}` : ''}`);
  };

  return (
    <section aria-labelledby="calls-heading">
      <h2 id="calls-heading">Calls one by one</h2>
      {unavailable ? (
        <p className="notice" data-testid="calls-unavailable">
          {unavailable}
        </p>
      ) : (
        <>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              lookup(requestId.trim());
            }}
          >
            <label className="inline">
              Request id
              <input
                name="requestId"
                placeholder="req_…"
                value={requestId}
                onChange={(e) => setRequestId(e.target.value)}
              />
            </label>
            <button type="submit">Look up</button>
            <label className="inline">
              Show
              <select
                name="show"
                value={show}
                onChange={(e) => setShow(e.target.value as 'charged' | 'refused')}
              >
                <option value="charged">Charged calls</option>
                <option value="refused">Refused calls</option>
              </select>
            </label>
          </form>
          {looked && <RequestLookup requestId={looked} onClose={() => lookup('')} />}
          {show === 'refused' ? (
            <UsageRefused {...range} valid={props.valid} />
          ) : (
            <>
              <p className="muted small">
                Newest first, from the journal, which keeps every call forever — calls of deleted keys
                included. Status, latency and finish reason are kept 30 days.
              </p>
              <ErrorLine error={error} />
              <ScrollTable head={HEAD} caption="Calls one by one" id="calls-table">
                {(calls ?? []).map((t) => (
                  <CallRow key={`${t.id}`} t={t} lookup={lookup} />
                ))}
              </ScrollTable>
              {calls !== null && calls.length === 0 && <p data-testid="no-calls">No calls in this range.</p>}
              {calls === null && !error && <p className="muted">Loading…</p>}
              {next !== null && (
                <button type="button" onClick={() => void more()} disabled={loading}>
                  {loading ? 'Loading…' : 'Load more'}
                </button>
              )}
            </>
          )}
        </>
      )}
    </section>
  );
}

/** One call by its request id: every transfer it caused, oldest first. */
function RequestLookup(props: { requestId: string; onClose: () => void }) {
  const [transfers, setTransfers] = useState<CallTransfer[] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    setTransfers(null);
    setError('');
    void api
      .callOf(props.requestId)
      .then((r) => setTransfers(r.transfers))
      .catch((err: Error) => setError(err.message));
  }, [props.requestId]);
  return (
    <Dialog title={`Request ${props.requestId}`} onClose={props.onClose} wide>
      <div data-testid="request-lookup">
        <button type="button" className="link" onClick={props.onClose}>
          Close
        </button>
        <ErrorLine error={error} />
        {transfers === null && !error && <p className="muted">Loading…</p>}
        {transfers !== null && (
          <ScrollTable head={HEAD} caption={`Transfers of ${props.requestId}`}>
            {transfers.map((t) => (
              <CallRow key={t.id} t={t} />
            ))}
          </ScrollTable>
        )}
        {transfers?.map((t) => (
          <Figures key={t.id} t={t} />
        ))}
      </div>
    </Dialog>
  );
}

/** Every figure the journal holds for one transfer, as a list of terms (the table shows a summary). */
function Figures({ t }: { t: CallTransfer }) {
  const rows: [string, string][] = [
    ['Type', typeLabel(t)],
    ['Time (UTC)', utcSecond(t.at)],
    ['Key', keyLabel(t)],
    ['Model', t.model ?? '—'],
    ['Kind', t.kind ?? '—'],
    ['Input tokens', n(t.inputTokens)],
    ['Cached tokens', n(t.cachedTokens)],
    ['Output tokens', n(t.outputTokens)],
    ['Images', n(t.images)],
    ['Video seconds', n(t.videoSeconds)],
    ['Cost', t.cost === null ? '—' : exactMoney(t.cost, null)],
    ['Charged', charged(t)],
    ['Currency', t.currency ?? '—'],
    ...(t.type === 'charge'
      ? ([
          ['HTTP status', t.status == null ? '—' : String(t.status)],
          ['Finish reason', t.finishReason ?? '—'],
          ['Latency', duration(t.latencyMs ?? null)],
          ['Time to first token', duration(t.ttftMs ?? null)],
        ] as [string, string][])
      : []),
    ...(t.refundOf ? ([['Refund of', t.refundOf]] as [string, string][]) : []),
    ...(t.reason ? ([['Reason', t.reason]] as [string, string][]) : []),
  ];
  return (
    <dl className="metrics figures" data-testid="call-figures" data-type={t.type}>
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
