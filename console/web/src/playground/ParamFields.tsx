// The text-generation parameters as fields (issue 37 item 3), each bounded by what the model and
// dialect accept (./params.ts): a number typed past a bound shows the bound, a parameter the
// dialect does not have is not shown, the max-tokens field states the model's limit.
import { useEffect, useState } from 'react';
import type { Dialect } from './calls.ts';
import {
  clamp,
  type JsonMode,
  type ParamLimits,
  parseSchema,
  type Range,
  type SamplingParams,
} from './params.ts';
import { parseTools, type ToolChoice } from './tools.ts';

const TOOLS_EXAMPLE =
  '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]';

/**
 * A number field that keeps what is being typed (an empty box, a lone "-" or "0.") while handing
 * on only numbers within `range`; a number past a bound is replaced by the bound at once. With
 * `optional`, an empty box is null (not sent).
 */
function NumberField(props: {
  label: string;
  hint?: string;
  value: number | null;
  range: Range;
  optional?: boolean;
  onChange: (v: number | null) => void;
}) {
  const { range } = props;
  const [text, setText] = useState(props.value === null ? '' : String(props.value));
  // A value changed from outside (a bound that moved with the model, a restored set-up) is shown.
  useEffect(() => {
    setText((t) =>
      t.trim() !== '' && Number(t) === props.value ? t : props.value === null ? '' : String(props.value),
    );
  }, [props.value]);
  return (
    <label>
      {props.label}
      {props.hint && <span className="muted small"> {props.hint}</span>}
      <input
        type="number"
        inputMode="decimal"
        min={range.min}
        max={range.max}
        step={range.step}
        value={text}
        placeholder={props.optional ? 'default' : undefined}
        onChange={(e) => {
          const raw = e.target.value;
          if (raw.trim() === '') {
            setText('');
            if (props.optional) props.onChange(null);
            return;
          }
          const n = Number(raw);
          if (!Number.isFinite(n)) return setText(raw);
          const bounded = clamp(range.step >= 1 ? Math.round(n) : n, range);
          setText(bounded === n ? raw : String(bounded));
          props.onChange(bounded);
        }}
        onBlur={() => setText(props.value === null ? '' : String(props.value))}
      />
    </label>
  );
}

const JSON_LABEL: Record<JsonMode, string> = {
  text: 'Text',
  json_object: 'JSON object',
  json_schema: 'JSON schema',
};

export function DialectField(props: { value: Dialect; onChange: (d: Dialect) => void }) {
  return (
    <label>
      Dialect
      <select value={props.value} onChange={(e) => props.onChange(e.target.value as Dialect)}>
        <option value="chat">Chat completions</option>
        <option value="messages">Messages</option>
      </select>
    </label>
  );
}

/** Every parameter of the dialect, within the model's limits. */
export function ParamFields(props: {
  value: SamplingParams;
  limits: ParamLimits;
  onChange: (p: Partial<SamplingParams>) => void;
}) {
  const { value: v, limits: l } = props;
  const schema = v.json === 'json_schema' ? parseSchema(v.schema) : null;
  const tools = parseTools(v.tools);
  const fmt = (n: number) => n.toLocaleString('en-US');
  return (
    <div className="params">
      <NumberField
        label="Temperature"
        hint={`${l.temperature.min}–${l.temperature.max}`}
        value={v.temperature}
        range={l.temperature}
        onChange={(t) => props.onChange({ temperature: t ?? l.temperature.min })}
      />
      <NumberField
        label="Max tokens"
        hint={`up to ${fmt(l.maxTokens.max)}`}
        value={v.maxTokens}
        range={l.maxTokens}
        onChange={(n) => props.onChange({ maxTokens: n ?? l.maxTokens.min })}
      />
      <NumberField
        label="Top P"
        hint={`${l.topP.min}–${l.topP.max}`}
        value={v.topP}
        range={l.topP}
        optional
        onChange={(topP) => props.onChange({ topP })}
      />
      {l.penalty && (
        <>
          <NumberField
            label="Frequency penalty"
            hint={`${l.penalty.min}–${l.penalty.max}`}
            value={v.frequencyPenalty}
            range={l.penalty}
            optional
            onChange={(frequencyPenalty) => props.onChange({ frequencyPenalty })}
          />
          <NumberField
            label="Presence penalty"
            hint={`${l.penalty.min}–${l.penalty.max}`}
            value={v.presencePenalty}
            range={l.penalty}
            optional
            onChange={(presencePenalty) => props.onChange({ presencePenalty })}
          />
        </>
      )}
      {l.seed && (
        <NumberField
          label="Seed"
          value={v.seed}
          range={l.seed}
          optional
          onChange={(seed) => props.onChange({ seed })}
        />
      )}
      <label>
        Stop sequences <span className="muted small">one a line, up to {l.stops}</span>
        <textarea
          rows={2}
          value={v.stop.join('\n')}
          onChange={(e) => props.onChange({ stop: e.target.value.split('\n').slice(0, l.stops) })}
        />
      </label>
      <label>
        Output
        <select value={v.json} onChange={(e) => props.onChange({ json: e.target.value as JsonMode })}>
          {l.json.map((j) => (
            <option key={j} value={j}>
              {JSON_LABEL[j]}
            </option>
          ))}
        </select>
      </label>
      {v.json === 'json_schema' && (
        <label>
          JSON schema
          <textarea
            rows={5}
            className="mono"
            value={v.schema}
            aria-invalid={schema !== null && 'error' in schema}
            onChange={(e) => props.onChange({ schema: e.target.value })}
          />
          {schema && 'error' in schema && (
            <span className="error small" data-testid="schema-error">
              {schema.error}
            </span>
          )}
        </label>
      )}
      {/* Only a model that calls tools is offered them (the proxy refuses tools to the others). */}
      {l.tools && (
        <label>
          Tools (JSON array of functions; empty: none)
          <textarea
            rows={3}
            className="mono"
            placeholder={TOOLS_EXAMPLE}
            value={v.tools}
            aria-invalid={'error' in tools}
            onChange={(e) => props.onChange({ tools: e.target.value })}
          />
          {'error' in tools && (
            <span className="error small" data-testid="tools-error">
              {tools.error}
            </span>
          )}
        </label>
      )}
      {l.tools && v.tools.trim() !== '' && (
        <label>
          Tool choice
          <select
            value={v.toolChoice}
            onChange={(e) => props.onChange({ toolChoice: e.target.value as ToolChoice })}
          >
            <option value="auto">auto (the model decides)</option>
            <option value="required">required (a tool must be called)</option>
            <option value="none">none (no tool is called)</option>
          </select>
        </label>
      )}
    </div>
  );
}
