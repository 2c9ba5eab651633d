// API Management (SPEC "What the service does" 7, the API key state table): the API Endpoint row,
// the keys table (Name, Key masked, Created Date, Actions) and Generate New Key; a new or rotated
// secret is shown once, in the "API Key Created" dialog; Sample API Implementation below.
import { useCallback, useEffect, useState } from 'react';
import { FieldError, optionalAmount } from '../amount-input.ts';
import { ApiError, api, type KeyRow, type Me } from '../api.ts';
import { CopyButton } from '../copy.tsx';
import { Dialog, DialogActions } from '../Dialog.tsx';
import { date, money } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { navigate } from '../router.tsx';
import { Snippets } from '../Snippets.tsx';
import { useTitle } from '../title.ts';
import { AccountRateLimits } from './AccountRateLimits.tsx';
import { KeyLimitsDialog, PERIOD } from './KeyLimits.tsx';

type Open =
  | { kind: 'none' }
  | { kind: 'generate' }
  | { kind: 'created'; title: string; secret: string }
  | { kind: 'shown'; name: string; secret: string }
  | { kind: 'limit'; key: KeyRow }
  | { kind: 'rename'; key: KeyRow }
  | { kind: 'limits'; key: KeyRow }
  | { kind: 'confirm'; action: 'rotate' | 'delete'; key: KeyRow };

export function ApiManagement({ me }: { me: Me }) {
  useTitle('API Management');
  const [keys, setKeys] = useState<KeyRow[] | null>(null);
  const [open, setOpen] = useState<Open>({ kind: 'none' });
  const [error, setError] = useState('');
  const close = useCallback(() => setOpen({ kind: 'none' }), []);
  const reload = useCallback(async () => setKeys(await api.keys()), []);
  const currency = me.account.currency;
  const owner = me.account.role === 'owner';

  useEffect(() => {
    void (async () => {
      // Opening the page mints `Default` once for an account that never had a key.
      const { minted } = await api.ensureDefault();
      if (minted) setOpen({ kind: 'created', title: 'API Key Created', secret: minted.secret });
      await reload();
    })();
  }, [reload]);

  const act = async (f: () => Promise<void>) => {
    setError('');
    try {
      await f();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <>
      <h1>API Management</h1>
      <section aria-labelledby="endpoint-label" className="row endpoint">
        <strong id="endpoint-label">API Endpoint</strong>
        <code data-testid="endpoint">{me.apiBaseUrl}</code>
        <CopyButton text={me.apiBaseUrl} label="Copy the API endpoint" />
      </section>
      <p className="muted small">
        Anthropic SDKs and editor tools: base address <code>{me.messagesBaseUrl}</code> (without{' '}
        <code>/v1</code>), the key as the Anthropic key. <a href="/docs">API Reference</a>
      </p>
      <div className="row spread">
        <h2>API Keys</h2>
        <button type="button" className="primary" onClick={() => setOpen({ kind: 'generate' })}>
          Generate New Key
        </button>
      </div>
      <ErrorLine error={error} />
      <ScrollTable
        // SPEC's four columns (CON-3); a key's last use and this month's spend sit under its name.
        head={['Name', 'Key', 'Created Date', 'Actions']}
        id="keys-table"
      >
        {(keys ?? []).map((k) => (
          <tr key={k.id} data-key-id={k.id}>
            <td>
              <span data-testid="key-name">{k.name}</span>
              <div className="muted small">
                <span data-testid="last-used">
                  {k.lastUsedAt ? `last used ${date(k.lastUsedAt)}` : 'never used'}
                </span>
                {' · '}
                <span data-testid="month-spend">{money(k.monthSpend ?? '0', currency)}</span> this month
              </div>
              {k.spendLimit != null && (
                <div className="muted small" data-testid="limit">
                  {money(k.windowSpend ?? k.monthSpend ?? '0', currency)} of {money(k.spendLimit, currency)}{' '}
                  {PERIOD[k.spendWindow ?? 'month']}
                </div>
              )}
            </td>
            <td>
              <code className="masked">{k.key}</code>
            </td>
            <td>{date(k.createdAt)}</td>
            <td className="actions">
              {/* Members act only on keys they made (docs/security.md "Roles"); the server enforces it. */}
              <div className="key-actions">
                {(owner || k.mine) && (
                  <>
                    <button
                      type="button"
                      onClick={() =>
                        act(async () =>
                          setOpen({ kind: 'shown', name: k.name, secret: await api.show(k.id) }),
                        )
                      }
                    >
                      Show Key
                    </button>
                    <button
                      type="button"
                      onClick={() => setOpen({ kind: 'confirm', action: 'rotate', key: k })}
                    >
                      Rotate Key
                    </button>
                    <button
                      type="button"
                      onClick={() => setOpen({ kind: 'confirm', action: 'delete', key: k })}
                    >
                      Delete Key
                    </button>
                  </>
                )}
                <button type="button" onClick={() => navigate(`/usage?keyId=${encodeURIComponent(k.id)}`)}>
                  View Usage
                </button>
                {(owner || k.mine) && (
                  <button type="button" onClick={() => setOpen({ kind: 'limit', key: k })}>
                    Spend Limit
                  </button>
                )}
                <button type="button" onClick={() => setOpen({ kind: 'limits', key: k })}>
                  Limits
                </button>
                {(owner || k.mine) && (
                  <button type="button" onClick={() => setOpen({ kind: 'rename', key: k })}>
                    Rename
                  </button>
                )}
              </div>
            </td>
          </tr>
        ))}
      </ScrollTable>
      {keys === null && !error && (
        <p className="muted" data-testid="keys-loading">
          Loading…
        </p>
      )}
      {keys !== null && keys.length === 0 && <p>No active keys. Generate one to call the API.</p>}
      {/* Below the keys: what this page is first for stays at the top (issue 19 item 8). */}
      <AccountRateLimits owner={owner} />

      <Snippets base={me.apiBaseUrl} />

      {open.kind === 'generate' && (
        <GenerateKey
          currency={currency}
          onCancel={close}
          onCreated={async (secret) => {
            setOpen({ kind: 'created', title: 'API Key Created', secret });
            await reload();
          }}
        />
      )}
      {(open.kind === 'created' || open.kind === 'shown') && (
        <Dialog title={open.kind === 'created' ? open.title : `Key: ${open.name}`} onClose={close}>
          {open.kind === 'created' && <p>Copy it now: it is shown this once.</p>}
          <code data-testid="secret" className="secret">
            {open.secret}
          </code>
          <div className="row">
            <CopyButton text={open.secret} label="Copy the key" />
            <button type="button" onClick={close}>
              Done
            </button>
          </div>
        </Dialog>
      )}
      {open.kind === 'limit' && (
        <SpendLimit
          keyRow={open.key}
          currency={currency}
          onCancel={close}
          onSaved={async () => {
            close();
            await reload();
          }}
        />
      )}
      {open.kind === 'rename' && (
        <RenameKey
          keyRow={open.key}
          onCancel={close}
          onSaved={async () => {
            close();
            await reload();
          }}
        />
      )}
      {open.kind === 'limits' && (
        <KeyLimitsDialog
          keyRow={open.key}
          currency={currency}
          editable={owner}
          onClose={close}
          onSaved={async () => {
            close();
            await reload();
          }}
        />
      )}
      {open.kind === 'confirm' && (
        <Dialog title={open.action === 'rotate' ? 'Rotate Key?' : 'Delete Key?'} onClose={close}>
          <p>
            {open.action === 'rotate'
              ? `The current secret of "${open.key.name}" stops working at once; requests using it fail. The key keeps its name and usage.`
              : `"${open.key.name}" stops working at once and cannot be restored. Its usage stays in reports.`}
          </p>
          <div className="row">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button
              type="button"
              className="danger"
              onClick={() =>
                act(async () => {
                  const key = open.key;
                  if (open.action === 'rotate') {
                    const { secret } = await api.rotate(key.id);
                    setOpen({ kind: 'created', title: 'API Key Rotated', secret });
                  } else {
                    await api.remove(key.id);
                    close();
                  }
                  await reload();
                })
              }
            >
              {open.action === 'rotate' ? 'Rotate' : 'Delete'}
            </button>
          </div>
        </Dialog>
      )}
    </>
  );
}

/** The name field: Enter submits, Esc cancels (the dialog's own key handling); errors inline. */
function GenerateKey(props: {
  currency: string | null;
  onCancel: () => void;
  onCreated: (secret: string) => void;
}) {
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [error, setError] = useState<{ message: string; param: string | null } | null>(null);
  const submit = async () => {
    try {
      const spendLimit = optionalAmount('Monthly spend limit', limit);
      props.onCreated((await api.create(name.trim(), spendLimit ?? undefined)).secret);
    } catch (err) {
      const param = err instanceof ApiError ? err.param : err instanceof FieldError ? 'spendLimit' : null;
      setError({ message: (err as Error).message, param });
    }
  };
  const limitError = error?.param === 'spendLimit';
  return (
    <Dialog title="Generate New Key" onClose={props.onCancel}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label>
          Name
          <input
            name="name"
            value={name}
            maxLength={1000}
            aria-invalid={error !== null && !limitError}
            aria-describedby="generate-error"
            onChange={(e) => {
              setName(e.target.value);
              setError(null);
            }}
          />
        </label>
        <label>
          Monthly spend limit{props.currency ? ` (${props.currency})` : ''}, optional
          <input
            name="spendLimit"
            inputMode="decimal"
            value={limit}
            placeholder="no limit"
            aria-invalid={limitError}
            aria-describedby="generate-error"
            onChange={(e) => {
              setLimit(e.target.value);
              setError(null);
            }}
          />
        </label>
        <ErrorLine id="generate-error" error={error?.message} />
        <DialogActions onCancel={props.onCancel} submit="Create" />
      </form>
    </Dialog>
  );
}

/** Rename Key (issue 48 item 10): Enter saves, Esc cancels; a refused name is said in the dialog. */
function RenameKey(props: { keyRow: KeyRow; onCancel: () => void; onSaved: () => void }) {
  const [name, setName] = useState(props.keyRow.name);
  const [error, setError] = useState('');
  return (
    <Dialog title={`Rename Key: ${props.keyRow.name}`} onClose={props.onCancel}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await api.rename(props.keyRow.id, name.trim());
            props.onSaved();
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <p className="small">
          The key keeps its secret, its limits and its usage; reports show the new name.
        </p>
        <label>
          Name
          <input
            name="name"
            value={name}
            maxLength={1000}
            aria-invalid={error !== ''}
            aria-describedby="rename-error"
            onChange={(e) => {
              setName(e.target.value);
              setError('');
            }}
          />
        </label>
        <ErrorLine id="rename-error" error={error} />
        <DialogActions onCancel={props.onCancel} submit="Save" />
      </form>
    </Dialog>
  );
}

function SpendLimit(props: {
  keyRow: KeyRow;
  currency: string | null;
  onCancel: () => void;
  onSaved: () => void;
}) {
  const [limit, setLimit] = useState(props.keyRow.spendLimit ?? '');
  const [error, setError] = useState('');
  const save = async (typed: string | null) => {
    try {
      const value = typed === null ? null : optionalAmount('Monthly spend limit', typed);
      await api.setLimit(props.keyRow.id, value);
      props.onSaved();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <Dialog title={`Spend Limit: ${props.keyRow.name}`} onClose={props.onCancel}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save(limit);
        }}
      >
        <p className="small">
          A call that would pass the limit is refused with 429 <code>insufficient_quota</code>. The month is
          the calendar month (UTC).
        </p>
        <label>
          Monthly spend limit{props.currency ? ` (${props.currency})` : ''}
          <input
            name="spendLimit"
            inputMode="decimal"
            value={limit}
            placeholder="no limit"
            aria-describedby="limit-error"
            onChange={(e) => {
              setLimit(e.target.value);
              setError('');
            }}
          />
        </label>
        <ErrorLine id="limit-error" error={error} />
        <DialogActions
          onCancel={props.onCancel}
          submit="Save"
          clear={
            props.keyRow.spendLimit != null ? { label: 'Remove Limit', onClick: () => void save(null) } : null
          }
        />
      </form>
    </Dialog>
  );
}
