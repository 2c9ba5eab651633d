// The Playground's form fields, drawn the same way in every tab: a labelled choice and a prompt box
// that runs on Enter (Shift+Enter for a new line). The text-generation parameters: ./ParamFields.tsx.
import type { ReactNode } from 'react';

export function Choice(props: {
  label: ReactNode;
  value: string;
  options: readonly string[];
  onChange: (v: string) => void;
}) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

export function PromptBox(props: {
  label: ReactNode;
  value: string;
  onChange: (v: string) => void;
  onRun: () => void;
  onStop?: () => void;
  rows?: number;
}) {
  return (
    <label className="block">
      {props.label}
      <textarea
        rows={props.rows ?? 2}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            props.onRun();
          }
          if (e.key === 'Escape') props.onStop?.();
        }}
      />
    </label>
  );
}

/** A media size as "WIDTHxHEIGHT" → the element's width and height: drawn at its own size, CSS caps it at the page's width. */
export function sizeAttributes(size: string | undefined): { width?: number; height?: number } {
  const [w, h] = (size ?? '').split('x').map(Number);
  return w && h ? { width: w, height: h } : {};
}
