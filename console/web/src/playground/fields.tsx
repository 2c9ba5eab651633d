// The Playground's form fields, drawn the same way in every tab: a labelled choice, a prompt box
// that runs on Enter (Shift+Enter for a new line), and the text-generation parameters.
import type { ReactNode } from 'react';
import type { Dialect } from './calls.ts';

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

export interface TextParams {
  temperature: number;
  maxTokens: number;
  dialect: Dialect;
}

/** Temperature, max tokens and the dialect (chat completions or Messages). */
export function TextParamFields(props: { value: TextParams; onChange: (p: Partial<TextParams>) => void }) {
  const v = props.value;
  return (
    <>
      <label>
        Dialect
        <select value={v.dialect} onChange={(e) => props.onChange({ dialect: e.target.value as Dialect })}>
          <option value="chat">Chat completions</option>
          <option value="messages">Messages</option>
        </select>
      </label>
      <label>
        Temperature
        <input
          type="number"
          min={0}
          max={2}
          step={0.1}
          value={v.temperature}
          onChange={(e) => props.onChange({ temperature: Number(e.target.value) })}
        />
      </label>
      <label>
        Max tokens
        <input
          type="number"
          min={1}
          max={32768}
          value={v.maxTokens}
          onChange={(e) => props.onChange({ maxTokens: Number(e.target.value) })}
        />
      </label>
    </>
  );
}
