// What a Run is made with (issue 37 items 3 and 8): the model — its full id, never cut off — the
// dialect, the system prompt and the parameters. Beside the chat on a wide screen; on a phone
// folded under it, so the message box stays above the fold.
import type { PricedModel } from '../api.ts';
import type { Dialect } from './calls.ts';
import { Choice } from './fields.tsx';
import { DialectField, ParamFields } from './ParamFields.tsx';
import type { ParamLimits, SamplingParams } from './params.ts';

export function RunSettings(props: {
  open: boolean;
  models: PricedModel[];
  model: string;
  onModel: (id: string) => void;
  dialect: Dialect;
  onDialect: (d: Dialect) => void;
  system: string;
  onSystem: (s: string) => void;
  params: SamplingParams;
  limits: ParamLimits;
  onParams: (p: Partial<SamplingParams>) => void;
}) {
  return (
    <details className="run-settings" open={props.open}>
      <summary>
        Model and parameters <span className="muted small">{props.model}</span>
      </summary>
      <Choice
        label="Model"
        value={props.model}
        options={props.models.map((m) => m.id)}
        onChange={props.onModel}
      />
      <DialectField value={props.dialect} onChange={props.onDialect} />
      <label>
        System prompt
        <textarea rows={2} value={props.system} onChange={(e) => props.onSystem(e.target.value)} />
      </label>
      <ParamFields value={props.params} limits={props.limits} onChange={props.onParams} />
    </details>
  );
}
