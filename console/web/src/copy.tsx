// A copy-to-clipboard button that says it copied (for screen readers too, through a live region).
import { useState } from 'react';

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      aria-label={label === 'Copy' ? undefined : label}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        } catch {
          // Clipboard refused (no permission, insecure origin): the text stays selectable on the page.
        }
      }}
    >
      <span aria-live="polite">{done ? 'Copied' : 'Copy'}</span>
    </button>
  );
}
