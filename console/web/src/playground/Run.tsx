// Run a prompt (issue 19 item 3, CON-10): a text model, system prompt, multi-turn messages,
// temperature, max tokens and the dialect; the reply streams in as generated; Stop (or Esc) ends
// the call — the proxy stops the engine and bills what was generated; then the metrics and cost.
import { useEffect, useRef, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { CopyButton } from '../copy.tsx';
import { Dialog } from '../Dialog.tsx';
import { Tabs } from '../Tabs.tsx';
import {
  CallError,
  type ChatMessage,
  type ChatRequest,
  type Dialect,
  type RunMetrics,
  streamReply,
} from './calls.ts';
import { CODE_LANGUAGES, type CodeLanguage, callCode, KEY_VARIABLE } from './code.ts';
import { balanceBeside, costOf } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { Choice, PromptBox, TextParamFields } from './fields.tsx';
import { type Cost, Metrics } from './Metrics.tsx';

export function Run(props: {
  apiBase: string;
  secret: string | null;
  models: PricedModel[];
  model: string;
  onModel: (id: string) => void;
  currency: string | null;
}) {
  const [system, setSystem] = useState('');
  const [history, setHistory] = useState<ChatMessage[]>([]);
  const [prompt, setPrompt] = useState('');
  const [temperature, setTemperature] = useState(0.7);
  const [maxTokens, setMaxTokens] = useState(256);
  const [dialect, setDialect] = useState<Dialect>('chat');
  const [reply, setReply] = useState('');
  const [metrics, setMetrics] = useState<RunMetrics | null>(null);
  const [cost, setCost] = useState<Cost | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);
  const [code, setCode] = useState<CodeLanguage | null>(null);
  const abort = useRef<AbortController | null>(null);
  /** The run whose cost may still be shown: a cost read late for an earlier run is dropped. */
  const latestRun = useRef(0);

  const request = (): ChatRequest => ({
    model: props.model,
    system,
    messages: [...history, ...(prompt.trim() ? [{ role: 'user' as const, content: prompt }] : [])],
    temperature,
    maxTokens,
  });

  const stop = () => abort.current?.abort();
  useEffect(() => {
    // Esc stops a running reply from anywhere on the page (a dialog's Esc closes the dialog first).
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') abort.current?.abort();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const run = async () => {
    if (!props.secret || running || !props.model) return;
    const r = request();
    if (r.messages.length === 0) return;
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    setReply('');
    setMetrics(null);
    setCost(null);
    setError(null);
    let text = '';
    const balance = balanceBeside();
    const thisRun = ++latestRun.current;
    // The cost is read after Run is usable again: where the response carried no `usage.cost` it is
    // the balance change, which can take seconds to show (or never come), and the page must not
    // wait for it (issue 37 item 1: a refused call froze Run for 15 s).
    let costLater: (() => Promise<Cost | null>) | null = null;
    try {
      const m = await streamReply({
        apiBase: props.apiBase,
        secret: props.secret,
        dialect,
        request: r,
        signal: controller.signal,
        onText: (t) => {
          text += t;
          setReply(text);
        },
        onMetrics: setMetrics,
      });
      balance.ended();
      setMetrics(m);
      setHistory([...r.messages, { role: 'assistant', content: text }]);
      setPrompt('');
      costLater = async () => {
        const before = await balance.before();
        return m.cost !== null || before !== null ? costOf(m.cost, before ?? 0n) : null;
      };
    } catch (err) {
      balance.ended();
      setError(err);
      // A refusal (an error status, before any byte) is never charged: no balance change to wait for.
      const refused = err instanceof CallError && err.status !== 200;
      if (!refused)
        costLater = async () => {
          const before = await balance.before();
          return before !== null ? costOf(null, before) : null;
        };
    } finally {
      abort.current = null;
      setRunning(false);
    }
    const c = await costLater?.().catch(() => null);
    if (c != null && latestRun.current === thisRun) setCost(c);
  };

  return (
    <section aria-labelledby="run-heading" className="run">
      <h2 id="run-heading">Run a prompt</h2>
      <div className="grid-params">
        <Choice
          label="Model"
          value={props.model}
          options={props.models.map((m) => m.id)}
          onChange={props.onModel}
        />
        <TextParamFields
          value={{ temperature, maxTokens, dialect }}
          onChange={(p) => {
            if (p.temperature !== undefined) setTemperature(p.temperature);
            if (p.maxTokens !== undefined) setMaxTokens(p.maxTokens);
            if (p.dialect !== undefined) setDialect(p.dialect);
          }}
        />
      </div>
      <label className="block">
        System prompt
        <textarea rows={2} value={system} onChange={(e) => setSystem(e.target.value)} />
      </label>
      {history.length > 0 && (
        <ol className="conversation" aria-label="Conversation">
          {history.map((m, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a conversation only grows at its end
            <li key={i} className={m.role}>
              <strong>{m.role === 'user' ? 'You' : 'Model'}:</strong> {m.content}
            </li>
          ))}
        </ol>
      )}
      <PromptBox
        label={
          <>
            Message <span className="muted small">(Enter runs, Shift+Enter for a new line, Esc stops)</span>
          </>
        }
        rows={3}
        value={prompt}
        onChange={setPrompt}
        onRun={() => void run()}
      />
      <div className="row">
        {running ? (
          <button type="button" className="danger" onClick={stop}>
            Stop
          </button>
        ) : (
          <button type="button" className="primary" onClick={() => void run()} disabled={!props.secret}>
            Run
          </button>
        )}
        <button type="button" onClick={() => setCode('CURL')}>
          View code
        </button>
        {history.length > 0 && !running && (
          <button type="button" onClick={() => setHistory([])}>
            New conversation
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      <div className="reply" data-testid="reply" aria-live="off" aria-busy={running}>
        {reply}
      </div>
      {metrics?.stopped && <p className="muted small">Stopped: what was generated is billed.</p>}
      <Metrics m={metrics} cost={cost} currency={props.currency} />
      {code && (
        <Dialog title="View code" onClose={() => setCode(null)}>
          <Tabs
            label="Language"
            items={CODE_LANGUAGES}
            value={code}
            onChange={setCode}
            idPrefix="code"
            controls="code-panel"
          />
          <div id="code-panel" role="tabpanel">
            <p className="muted small">
              The key is read from <code>{KEY_VARIABLE}</code>.
            </p>
            <pre data-testid="code">
              <code>{callCode(code, dialect, props.apiBase, request())}</code>
            </pre>
            <CopyButton text={callCode(code, dialect, props.apiBase, request())} label="Copy the code" />
          </div>
          <button type="button" onClick={() => setCode(null)}>
            Close
          </button>
        </Dialog>
      )}
    </section>
  );
}
