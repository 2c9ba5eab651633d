// Run a prompt as a chat (issue 19 item 3, CON-10; issue 37 items 2 and 3): the conversation above,
// the message box below it, the model, dialect, system prompt and parameters beside (below, folded,
// on a phone). The reply streams into the thread as generated; Stop (or Esc) ends the call — the
// proxy stops the engine and bills what was generated; each reply then shows its own metrics and
// cost. The conversation is kept in this browser across reloads (./conversation.ts).
import { useEffect, useRef, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { CallError, type ChatRequest, streamReply } from './calls.ts';
import {
  beforeReply,
  type Conversation,
  callMessages,
  deletedAt,
  editedAt,
  emptyConversation,
  loadConversation,
  saveConversation,
  type ThreadMessage,
} from './conversation.ts';
import { balanceBeside, costOf } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { PromptBox } from './fields.tsx';
import type { Cost } from './Metrics.tsx';
import { limitsFor, parseSchema, withinLimits } from './params.ts';
import { RunSettings } from './RunSettings.tsx';
import { type Streaming, Thread } from './Thread.tsx';
import { parseTools } from './tools.ts';
import { ViewCode } from './ViewCode.tsx';

/** Wide enough for the settings beside the chat; below it they fold under it. */
const WIDE = '(min-width: 760px)';

export function Run(props: {
  apiBase: string;
  secret: string | null;
  accountId: string;
  models: PricedModel[];
  model: string;
  onModel: (id: string) => void;
  currency: string | null;
}) {
  const [conv, setConv] = useState<Conversation>(
    () => loadConversation(localStorage, props.accountId) ?? emptyConversation(),
  );
  const [prompt, setPrompt] = useState('');
  const [streaming, setStreaming] = useState<Streaming | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [code, setCode] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const composer = useRef<HTMLDivElement>(null);
  /** The run whose cost may still be shown: a cost read late for an earlier run is dropped. */
  const latestRun = useRef(0);
  const running = streaming !== null;
  const model = props.models.find((m) => m.id === props.model);
  const limits = limitsFor(model, conv.dialect);
  const params = withinLimits(conv.params, limits);
  const schema = params.json === 'json_schema' ? parseSchema(params.schema) : null;

  useEffect(() => {
    saveConversation(localStorage, props.accountId, { ...conv, model: props.model });
  }, [conv, props.accountId, props.model]);

  const set = (patch: Partial<Conversation>) => setConv((c) => ({ ...c, ...patch }));
  const request = (messages: ThreadMessage[]): ChatRequest => ({
    model: props.model,
    system: conv.system,
    messages: callMessages(messages),
    params,
  });

  useEffect(() => {
    // Esc stops a running reply from anywhere on the page (a dialog's Esc closes the dialog first).
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') abort.current?.abort();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  /** Runs the conversation `thread` (ending with a user message) and adds the reply to it. */
  const send = async (thread: ThreadMessage[], fromBox: boolean) => {
    if (!props.secret || running || !props.model || thread.length === 0) return;
    if (schema && 'error' in schema) return setError(new Error(schema.error));
    const tools = parseTools(params.tools);
    if ('error' in tools) return setError(new Error(tools.error));
    const r = request(thread);
    const controller = new AbortController();
    abort.current = controller;
    setStreaming({ text: '', metrics: null });
    setError(null);
    let text = '';
    const balance = balanceBeside();
    const thisRun = ++latestRun.current;
    // The cost is read after Run is usable again: where the response carried no `usage.cost` it is
    // the balance change, which can take seconds to show (or never come), and the page must not
    // wait for it (issue 37 item 1: a refused call froze Run for 15 s).
    let costLater: (() => Promise<Cost | null>) | null = null;
    const replyAt = thread.length;
    try {
      const m = await streamReply({
        apiBase: props.apiBase,
        secret: props.secret,
        dialect: conv.dialect,
        request: r,
        signal: controller.signal,
        onText: (t) => {
          text += t;
          setStreaming((s) => s && { ...s, text });
        },
        onMetrics: (metrics) => setStreaming((s) => s && { ...s, metrics }),
      });
      balance.ended();
      set({ messages: [...thread, { role: 'assistant', content: text, metrics: m, stopped: m.stopped }] });
      if (fromBox) setPrompt('');
      costLater = async () => {
        const before = await balance.before();
        return m.cost !== null || before !== null ? costOf(m.cost, before ?? 0n) : null;
      };
    } catch (err) {
      balance.ended();
      setError(err);
      // A refusal (an error status, before any byte) is never charged: no balance change to wait for.
      const refused = err instanceof CallError && err.status !== 200;
      if (!refused) {
        // What arrived before the stream failed is shown, as the reply it was.
        if (text !== '') set({ messages: [...thread, { role: 'assistant', content: text }] });
        costLater = async () => {
          const before = await balance.before();
          return before !== null ? costOf(null, before) : null;
        };
      }
    } finally {
      abort.current = null;
      setStreaming(null);
    }
    const c = await costLater?.().catch(() => null);
    if (c != null && latestRun.current === thisRun)
      setConv((cv) => ({
        ...cv,
        messages: cv.messages.map((msg, i) =>
          i === replyAt && msg.role === 'assistant' ? { ...msg, cost: c } : msg,
        ),
      }));
  };

  const run = () => {
    if (!prompt.trim()) return;
    void send([...conv.messages, { role: 'user', content: prompt }], true);
  };
  const wide = typeof matchMedia === 'function' && matchMedia(WIDE).matches;

  return (
    <section aria-labelledby="run-heading" className="run">
      <h2 id="run-heading" className="visually-hidden">
        Run a prompt
      </h2>
      <div className="run-layout">
        <div className="chat">
          <Thread
            messages={conv.messages}
            streaming={streaming}
            currency={props.currency}
            composer={composer}
            onRegenerate={(i) => {
              const before = beforeReply(conv.messages, i);
              if (before) void send(before, false);
            }}
            onEdit={(i, content) => void send(editedAt(conv.messages, i, content), false)}
            onDelete={(i) => set({ messages: deletedAt(conv.messages, i) })}
          />
          {conv.messages.length === 0 && !running && (
            <p className="muted empty-thread">Ask the model something: the conversation appears here.</p>
          )}
          <div className="composer" ref={composer}>
            <ErrorBox error={error} />
            <PromptBox
              label={
                <>
                  Message{' '}
                  <span className="muted small">(Enter runs, Shift+Enter for a new line, Esc stops)</span>
                </>
              }
              rows={3}
              value={prompt}
              onChange={setPrompt}
              onRun={run}
            />
            <div className="row">
              {running ? (
                <button type="button" className="danger" onClick={() => abort.current?.abort()}>
                  Stop
                </button>
              ) : (
                <button type="button" className="primary" onClick={run} disabled={!props.secret}>
                  Run
                </button>
              )}
              <button type="button" onClick={() => setCode(true)}>
                View code
              </button>
              {conv.messages.length > 0 && !running && (
                <button type="button" onClick={() => set({ messages: [] })}>
                  New conversation
                </button>
              )}
            </div>
          </div>
        </div>
        <RunSettings
          open={wide}
          models={props.models}
          model={props.model}
          onModel={props.onModel}
          dialect={conv.dialect}
          onDialect={(dialect) => set({ dialect })}
          system={conv.system}
          onSystem={(system) => set({ system })}
          params={params}
          limits={limits}
          onParams={(p) => setConv((c) => ({ ...c, params: { ...withinLimits(c.params, limits), ...p } }))}
        />
      </div>
      {code && (
        <ViewCode
          apiBase={props.apiBase}
          dialect={conv.dialect}
          request={request([
            ...conv.messages,
            ...(prompt.trim() ? [{ role: 'user' as const, content: prompt }] : []),
          ])}
          onClose={() => setCode(false)}
        />
      )}
    </section>
  );
}
