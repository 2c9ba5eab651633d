// An API refusal in words a person understands, what to do, and the API's own message below.
import { humanError } from './errors.ts';

export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return <div role="alert" className="error-box empty" />;
  const e = humanError(error);
  return (
    <div role="alert" className="error-box" data-testid="error">
      <strong>{e.title}</strong> {e.action}
      <div className="muted small">
        <code>{e.detail}</code>
      </div>
    </div>
  );
}
