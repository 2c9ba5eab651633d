// Compare's prompts (issue 37 item 4): one to MAX_PROMPTS, each asked in every column. One prompt
// reads as before ("Prompt"); several are numbered, each removable, so a result's "Prompt 2" names
// the box it came from.
import { MAX_PROMPTS } from './compare-setup.ts';
import { PromptBox } from './fields.tsx';

export function ComparePrompts(props: {
  prompts: string[];
  onChange: (prompts: string[]) => void;
  onRun: () => void;
  onStop: () => void;
}) {
  const { prompts } = props;
  const many = prompts.length > 1;
  const hint = <span className="muted small">(Enter runs every column, Esc stops them)</span>;
  return (
    <div className="compare-prompts">
      {prompts.map((p, k) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a prompt is its position (results are numbered by it)
        <div key={k} className="row compare-prompt">
          <PromptBox
            label={
              <>
                {many ? `Prompt ${k + 1}` : 'Prompt'} {k === 0 && hint}
              </>
            }
            rows={many ? 2 : 3}
            value={p}
            onChange={(v) => props.onChange(prompts.map((x, j) => (j === k ? v : x)))}
            onRun={props.onRun}
            onStop={props.onStop}
          />
          {many && (
            <button type="button" onClick={() => props.onChange(prompts.filter((_, j) => j !== k))}>
              Remove prompt {k + 1}
            </button>
          )}
        </div>
      ))}
      <button
        type="button"
        disabled={prompts.length >= MAX_PROMPTS}
        onClick={() => props.onChange([...prompts, ''])}
      >
        Add a prompt
      </button>
    </div>
  );
}
