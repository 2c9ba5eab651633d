// The usage page's refused calls (issue 37 item 7): calls answered with an error status once the
// key was known (bad input, no credit, a rate limit, an unknown model), never charged. The server
// keeps the newest ~1000 of 30 days per account, so a flood of bad requests cannot grow storage;
// a row opens a dialog with all it kept of the call.
import { useEffect, useState } from 'react';
import { api, type RefusedCall } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorLine, ScrollTable } from '../parts.tsx';

const HEAD = ['Time (UTC)', 'Request id', 'Key', 'Model', 'Refused', 'Charged'] as const;

/** A duration as people read it: 87 ms, 1.23 s; — when not known. */
export function duration(ms: number | null): string {
  if (ms === null) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

const utcSecond = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;

export function UsageRefused(props: { from: number; to: number; keyId?: string; valid: boolean }) {
  const [rows, setRows] = useState<RefusedCall[] | null>(null);
  const [error, setError] = useState('');
  const [open, setOpen] = useState<RefusedCall | null>(null);
  useEffect(() => {
    if (!props.valid) return;
    setRows(null);
    setError('');
    void api
      .refused({ from: props.from, to: props.to, limit: 200, ...(props.keyId ? { keyId: props.keyId } : {}) })
      .then((r) => setRows(r.data))
      .catch((err: Error) => setError(err.message));
  }, [props.from, props.to, props.keyId, props.valid]);
  return (
    <>
      <p className="muted small">
        Calls refused at the door, newest first: never charged. The newest 1,000 of the last 30 days are kept.
      </p>
      <ErrorLine error={error} />
      <ScrollTable head={HEAD} caption="Refused calls" id="refused-table">
        {(rows ?? []).map((r) => (
          <tr key={r.requestId} data-testid="refused-row">
            <td className="when">{utcSecond(r.at)}</td>
            <td className="request">
              <button type="button" className="link" onClick={() => setOpen(r)}>
                {r.requestId}
              </button>
            </td>
            <td>{r.keyName ?? r.keyId ?? '—'}</td>
            <td className="model">{r.model ?? '—'}</td>
            <td data-testid="refused-status">
              <span className="error">{r.status}</span> {r.code}
            </td>
            <td className="num">0</td>
          </tr>
        ))}
      </ScrollTable>
      {rows !== null && rows.length === 0 && <p data-testid="no-refused">No refused calls in this range.</p>}
      {rows === null && !error && <p className="muted">Loading…</p>}
      {open && (
        <Dialog title={`Refused ${open.requestId}`} onClose={() => setOpen(null)}>
          <dl className="metrics figures" data-testid="refused-figures">
            {(
              [
                ['Time (UTC)', utcSecond(open.at)],
                ['HTTP status', String(open.status)],
                ['Error code', open.code],
                ['Route', open.route],
                ['Key', open.keyName ?? open.keyId ?? '—'],
                ['Model', open.model ?? '—'],
                ['Latency', duration(open.latencyMs)],
                ['Charged', '0 (a refused call is never charged)'],
              ] as const
            ).map(([term, value]) => (
              <div key={term}>
                <dt>{term}</dt>
                <dd>{value}</dd>
              </div>
            ))}
          </dl>
          <button type="button" onClick={() => setOpen(null)}>
            Close
          </button>
        </Dialog>
      )}
    </>
  );
}
