// A row of tabs (WAI-ARIA tabs pattern): one tab stop, arrow keys move between tabs.
import { useRef } from 'react';

export function Tabs<T extends string>(props: {
  label: string;
  items: readonly T[];
  value: T;
  onChange: (v: T) => void;
  idPrefix: string;
  /** The id of the panel these tabs change. */
  controls: string;
}) {
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  return (
    <div role="tablist" aria-label={props.label} className="tabs">
      {props.items.map((item, i) => (
        <button
          key={item}
          ref={(el) => {
            refs.current[i] = el;
          }}
          type="button"
          role="tab"
          id={`${props.idPrefix}-tab-${i}`}
          aria-selected={item === props.value}
          aria-controls={props.controls}
          tabIndex={item === props.value ? 0 : -1}
          onClick={() => props.onChange(item)}
          onKeyDown={(e) => {
            const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
            if (step === 0) return;
            e.preventDefault();
            const next = (i + step + props.items.length) % props.items.length;
            props.onChange(props.items[next]!);
            refs.current[next]?.focus();
          }}
        >
          {item}
        </button>
      ))}
    </div>
  );
}
