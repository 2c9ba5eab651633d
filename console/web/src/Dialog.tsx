// A modal dialog: focus moves into it, Tab stays inside, Esc closes it, focus goes back to where
// it was when it closes.
import { type ReactNode, useEffect, useRef } from 'react';

const FOCUSABLE = 'input, button, a[href]';

export function Dialog(props: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  wide?: boolean;
  /** Replaces `wide`'s class: a dialog sized its own way (the image lightbox). */
  className?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = box.current?.querySelector<HTMLElement>(FOCUSABLE);
    first?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') props.onClose();
      if (e.key !== 'Tab' || !box.current) return;
      const items = [...box.current.querySelectorAll<HTMLElement>(FOCUSABLE)];
      const i = items.indexOf(document.activeElement as HTMLElement);
      const next = e.shiftKey ? (i <= 0 ? items.length - 1 : i - 1) : (i + 1) % items.length;
      items[next]?.focus();
      e.preventDefault();
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      before?.focus();
    };
  }, [props.onClose]);
  return (
    <div className="dialog-backdrop">
      <div
        role="dialog"
        aria-modal="true"
        aria-labelledby="dialog-title"
        ref={box}
        className={props.className ?? (props.wide ? 'wide' : undefined)}
      >
        <h2 id="dialog-title">{props.title}</h2>
        {props.children}
      </div>
    </div>
  );
}

/**
 * A dialog form's buttons, in the order every dialog here has them: Cancel (or Close, where
 * nothing may be changed), an optional action that clears what the dialog sets, and the submit.
 */
export function DialogActions(props: {
  onCancel: () => void;
  /** The form's submit button's label; none: a read-only dialog, whose Cancel says Close. */
  submit: string | null;
  clear?: { label: string; onClick: () => void } | null;
}) {
  return (
    <div className="row">
      <button type="button" onClick={props.onCancel}>
        {props.submit === null ? 'Close' : 'Cancel'}
      </button>
      {props.submit !== null && props.clear && (
        <button type="button" onClick={props.clear.onClick}>
          {props.clear.label}
        </button>
      )}
      {props.submit !== null && (
        <button type="submit" className="primary">
          {props.submit}
        </button>
      )}
    </div>
  );
}
