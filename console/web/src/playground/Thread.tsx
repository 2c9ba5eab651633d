// The conversation as a chat shows it (issue 37 item 2): each message once, in order, the reply
// being streamed last; replies as markdown with their own measurements and cost; per message its
// actions — copy; regenerate a reply; edit or delete what you wrote.
import { type RefObject, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { CopyButton } from '../copy.tsx';
import type { RunMetrics } from './calls.ts';
import type { ThreadMessage } from './conversation.ts';
import { type Cost, Metrics } from './Metrics.tsx';
import { Reply } from './Reply.tsx';

export interface Streaming {
  text: string;
  metrics: RunMetrics | null;
}

function UserMessage(props: {
  m: ThreadMessage;
  busy: boolean;
  onEdit: (content: string) => void;
  onDelete: () => void;
}) {
  const [draft, setDraft] = useState<string | null>(null);
  if (draft !== null)
    return (
      <>
        <label className="block">
          <span className="visually-hidden">Edit your message</span>
          <textarea rows={3} value={draft} onChange={(e) => setDraft(e.target.value)} />
        </label>
        <div className="row message-actions">
          <button
            type="button"
            className="primary"
            disabled={props.busy || draft.trim() === ''}
            onClick={() => {
              props.onEdit(draft);
              setDraft(null);
            }}
          >
            Save and run
          </button>
          <button type="button" onClick={() => setDraft(null)}>
            Cancel
          </button>
        </div>
      </>
    );
  return (
    <>
      <div className="user-text">{props.m.content}</div>
      <div className="row message-actions">
        <CopyButton text={props.m.content} label="Copy the message" />
        <button type="button" disabled={props.busy} onClick={() => setDraft(props.m.content)}>
          Edit
        </button>
        <button type="button" disabled={props.busy} onClick={props.onDelete}>
          Delete
        </button>
      </div>
    </>
  );
}

function AssistantMessage(props: {
  text: string;
  metrics: RunMetrics | null;
  cost: Cost | null;
  stopped: boolean;
  currency: string | null;
  live: boolean;
  actions: React.ReactNode;
}) {
  return (
    <>
      <div className="reply" data-testid="reply" aria-busy={props.live}>
        <Reply text={props.text} />
      </div>
      {props.stopped && <p className="muted small">Stopped: what was generated is billed.</p>}
      <Metrics m={props.metrics} cost={props.cost} currency={props.currency} live={props.live} />
      {props.actions}
    </>
  );
}

/** Room left between the newest message and the message box, so its last line is not flush against it. */
const GAP_PX = 8;

/**
 * Keeps the newest message — its text as it streams, then its metrics, cost and buttons — in view
 * above the sticky message box (issue 48 item 6), on every render: while a reply streams, when it
 * ends (the streamed item becomes a message), when its cost arrives later. It only ever scrolls
 * down, and only while the newest message ends under the box; a person who scrolls up to read
 * is left there until the next run starts.
 */
function useNewestInView(
  list: RefObject<HTMLOListElement | null>,
  below: RefObject<HTMLElement | null>,
  streaming: boolean,
) {
  const follow = useRef(true);
  // A new run (a message sent, a reply regenerated) follows its reply again.
  useEffect(() => {
    if (streaming) follow.current = true;
  }, [streaming]);
  useEffect(() => {
    let lastY = window.scrollY;
    // Only a person scrolls this page up while a reply grows: the scrolling below goes down.
    const onScroll = () => {
      if (window.scrollY < lastY - 1) follow.current = false;
      lastY = window.scrollY;
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    return () => window.removeEventListener('scroll', onScroll);
  }, []);
  useLayoutEffect(() => {
    const newest = list.current?.lastElementChild as HTMLElement | null | undefined;
    if (!follow.current || !newest) return;
    const boxTop = below.current?.getBoundingClientRect().top ?? window.innerHeight;
    if (newest.getBoundingClientRect().bottom + GAP_PX <= boxTop) return;
    // scrollIntoView rather than window.scrollBy: right whichever element is the one that scrolls.
    newest.style.scrollMarginBottom = `${window.innerHeight - boxTop + GAP_PX}px`;
    newest.scrollIntoView({ block: 'end' });
  });
}

export function Thread(props: {
  messages: ThreadMessage[];
  streaming: Streaming | null;
  currency: string | null;
  /** The sticky message box under the thread: the newest message is kept above it. */
  composer: RefObject<HTMLElement | null>;
  onRegenerate: (i: number) => void;
  onEdit: (i: number, content: string) => void;
  onDelete: (i: number) => void;
}) {
  const busy = props.streaming !== null;
  const list = useRef<HTMLOListElement>(null);
  useNewestInView(list, props.composer, busy);
  if (props.messages.length === 0 && !props.streaming) return null;
  return (
    <ol className="conversation" aria-label="Conversation" ref={list}>
      {props.messages.map((m, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a message is its place in the conversation
        <li key={i} className={m.role} data-testid="message" data-role={m.role}>
          <strong className="who">{m.role === 'user' ? 'You' : 'Model'}</strong>
          {m.role === 'user' ? (
            <UserMessage
              m={m}
              busy={busy}
              onEdit={(c) => props.onEdit(i, c)}
              onDelete={() => props.onDelete(i)}
            />
          ) : (
            <AssistantMessage
              text={m.content}
              metrics={m.metrics ?? null}
              cost={m.cost ?? null}
              stopped={m.stopped ?? false}
              currency={props.currency}
              live={false}
              actions={
                <div className="row message-actions">
                  <CopyButton text={m.content} label="Copy the reply" />
                  <button type="button" disabled={busy} onClick={() => props.onRegenerate(i)}>
                    Regenerate
                  </button>
                </div>
              }
            />
          )}
        </li>
      ))}
      {props.streaming && (
        <li className="assistant" data-testid="message" data-role="assistant">
          <strong className="who">Model</strong>
          <AssistantMessage
            text={props.streaming.text}
            metrics={props.streaming.metrics}
            cost={null}
            stopped={false}
            currency={props.currency}
            live
            actions={null}
          />
        </li>
      )}
    </ol>
  );
}
