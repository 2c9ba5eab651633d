// Small pieces every page draws the same way: the line that reports a refusal, and a table that
// scrolls sideways on a phone rather than widening the page.
import type { ReactNode } from 'react';

/**
 * A page's or a form's error line. Always present (empty when there is nothing to say), so a
 * screen reader announces each new message (role=alert) and the layout does not jump.
 */
export function ErrorLine(props: { error: ReactNode; id?: string }) {
  return (
    <p id={props.id} className="error" role="alert">
      {props.error}
    </p>
  );
}

/** A table with its column headings, in a box that scrolls sideways on a narrow screen. */
export function ScrollTable(props: {
  head: readonly string[];
  children: ReactNode;
  caption?: string;
  id?: string;
  role?: string;
}) {
  return (
    <div className="scroll" id={props.id} role={props.role}>
      <table>
        {props.caption && <caption className="visually-hidden">{props.caption}</caption>}
        <thead>
          <tr>
            {props.head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
