// Batches (issue 35 item 5; docs/console.md "Batches"): the account's batches of both APIs, newest
// first — status, line counts, what the finished lines have been charged so far, when each was
// created and expires — with its output and error files to download and Cancel for those the user
// may stop (owners any; members the batches of their own keys). The list refreshes itself while a
// batch is still running, since its counts and cost move on their own.
import { useCallback, useEffect, useState } from 'react';
import { api, type BatchRow, type Me } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { count, dateTime, exactMoney } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { Tabs } from '../Tabs.tsx';
import { useTitle } from '../title.ts';

const SHOWN = ['All', 'Running', 'Ended'] as const;
type Shown = (typeof SHOWN)[number];
const ENDED = new Set(['failed', 'completed', 'expired', 'cancelled']);
/** How often a running batch's counts are read again. */
const REFRESH_MS = 3_000;

const STATUS: Record<string, string> = {
  validating: 'Validating',
  in_progress: 'In progress',
  finalizing: 'Finalizing',
  completed: 'Completed',
  failed: 'Failed',
  expired: 'Expired',
  cancelling: 'Cancelling',
  cancelled: 'Cancelled',
};

function counts(b: BatchRow): string {
  const c = b.counts;
  const parts = [`${count(c.completed)} done`, `${count(c.failed)} failed`];
  if (c.cancelled > 0) parts.push(`${count(c.cancelled)} cancelled`);
  if (c.expired > 0) parts.push(`${count(c.expired)} expired`);
  return `${parts.join(', ')} of ${count(c.total)}`;
}

export function Batches({ me }: { me: Me }) {
  useTitle('Batches');
  const [rows, setRows] = useState<BatchRow[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [shown, setShown] = useState<Shown>('All');
  const [cancelling, setCancelling] = useState<BatchRow | null>(null);
  const [error, setError] = useState('');
  const load = useCallback(async () => {
    try {
      const page = await api.batches();
      setRows(page.data);
      setHasMore(page.hasMore);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  const running = rows?.some((b) => !ENDED.has(b.status)) ?? false;
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(t);
  }, [running, load]);

  const more = async () => {
    const last = rows?.at(-1);
    if (!last) return;
    const page = await api.batches(last.id);
    setRows([...(rows ?? []), ...page.data]);
    setHasMore(page.hasMore);
  };
  const cancel = async (b: BatchRow) => {
    setCancelling(null);
    setError('');
    try {
      const now = await api.cancelBatch(b.id);
      setRows((rs) => (rs ?? []).map((r) => (r.id === now.id ? now : r)));
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const list = (rows ?? []).filter((b) =>
    shown === 'All' ? true : shown === 'Ended' ? ENDED.has(b.status) : !ENDED.has(b.status),
  );
  const currency = me.account.currency;
  return (
    <>
      <h1>Batches</h1>
      <p className="muted small">
        Batches made through <code>/v1/batches</code> (OpenAI) and <code>/v1/messages/batches</code>{' '}
        (Anthropic). Lines run on idle capacity at the batch price; each finished line is charged once,
        failed, cancelled and expired lines are free. Files are ready when a batch has ended.
      </p>
      <Tabs
        label="Show"
        items={SHOWN}
        value={shown}
        onChange={setShown}
        idPrefix="batches"
        controls="batches-panel"
      />
      <ErrorLine error={error} />
      <div id="batches-panel" role="tabpanel" aria-labelledby={`batches-tab-${SHOWN.indexOf(shown)}`}>
        {rows === null ? (
          <p className="muted">Loading…</p>
        ) : list.length === 0 ? (
          <p className="muted">No batches{shown === 'All' ? ' yet' : ''}.</p>
        ) : (
          <ScrollTable
            id="batches-table"
            caption="Batches"
            head={['Batch', 'Status', 'Requests', 'Cost so far', 'Dates', '']}
          >
            {list.map((b) => (
              <tr key={b.id} data-batch={b.id}>
                <th scope="row">
                  <code className="small">{b.id}</code>
                  <div className="muted small">
                    {b.api === 'anthropic' ? 'Anthropic' : 'OpenAI'} · {b.endpoint}
                    {b.model ? ` · ${b.model}` : ''}
                    {b.keyName ? ` · key ${b.keyName}` : ''}
                  </div>
                </th>
                <td className="status" data-label="Status">
                  {STATUS[b.status] ?? b.status}
                </td>
                <td className="requests" data-label="Requests">
                  {counts(b)}
                </td>
                <td className="cost" data-label="Cost so far">
                  {exactMoney(b.cost, b.currency ?? currency, 6)}
                </td>
                <td className="small">
                  Created {dateTime(b.createdAt)}
                  <br />
                  {b.endedAt
                    ? `Ended ${dateTime(b.endedAt)}`
                    : b.expiresAt
                      ? `Expires ${dateTime(b.expiresAt)}`
                      : ''}
                </td>
                <td>
                  <div className="row">
                    {b.outputFile && (
                      <a href={`/api/batches/${encodeURIComponent(b.id)}/output`} download>
                        Output
                      </a>
                    )}
                    {b.errorFile && (
                      <a href={`/api/batches/${encodeURIComponent(b.id)}/errors`} download>
                        Errors
                      </a>
                    )}
                    {b.mayCancel && (
                      <button type="button" className="danger" onClick={() => setCancelling(b)}>
                        Cancel
                      </button>
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </ScrollTable>
        )}
        {hasMore && (
          <button type="button" onClick={() => void more()}>
            Show more
          </button>
        )}
      </div>
      {cancelling && (
        <Dialog title="Cancel batch?" onClose={() => setCancelling(null)}>
          <p>
            No new request of <code>{cancelling.id}</code> starts; those running finish and are charged. The
            rest are reported cancelled and cost nothing.
          </p>
          <div className="row">
            <button type="button" onClick={() => setCancelling(null)}>
              Keep running
            </button>
            <button type="button" className="danger" onClick={() => void cancel(cancelling)}>
              Cancel batch
            </button>
          </div>
        </Dialog>
      )}
    </>
  );
}
