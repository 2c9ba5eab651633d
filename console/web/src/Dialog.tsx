// A modal dialog, on Radix's (issue 48 item 11): focus moves into it and stays inside (every
// focusable element, selects and text areas too), Esc closes it, focus goes back to where it was,
// and the page behind is hidden from screen readers and cannot be clicked. The
// hand-rolled one before it trapped only inputs, buttons and links (Tab from a select jumped to
// the first field) and left the page behind readable by screen readers and clickable.
import * as Radix from '@radix-ui/react-dialog';
import { type ReactNode, useRef } from 'react';

export function Dialog(props: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  wide?: boolean;
  /** Replaces `wide`'s class: a dialog sized its own way (the image lightbox). */
  className?: string;
}) {
  // Our dialogs open from a button, not a Radix Trigger: Radix would give focus back to a trigger it
  // does not have, so the element focused when the dialog opened is kept, and focus goes back to it.
  const opener = useRef(document.activeElement as HTMLElement | null);
  return (
    <Radix.Root
      open
      onOpenChange={(open) => {
        if (!open) props.onClose();
      }}
    >
      <Radix.Portal>
        {/* Our own backdrop, not Radix's Overlay: the Overlay's scroll lock injects a <style>
            element, which the console's CSP (style-src 'self') refuses. The content inside it: a
            dialog taller than the window scrolls in it. */}
        <div className="dialog-backdrop">
          <Radix.Content
            className={props.className ?? (props.wide ? 'wide' : undefined)}
            // What the dialog says is its content, read after its title; no separate description.
            aria-describedby={undefined}
            // A click on the backdrop does not close it: a half-filled form would be lost.
            onPointerDownOutside={(e) => e.preventDefault()}
            onCloseAutoFocus={(e) => {
              e.preventDefault();
              opener.current?.focus();
            }}
          >
            <Radix.Title>{props.title}</Radix.Title>
            {props.children}
          </Radix.Content>
        </div>
      </Radix.Portal>
    </Radix.Root>
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
