// A model's reply as it reads in a chat (issue 37 item 2): markdown to React elements (never raw
// HTML: a reply's `<script>` or `<img onerror>` is shown as the text it is), code blocks
// highlighted, each with its own copy button. It is re-rendered as text streams in; markdown-to-jsx
// parses an unfinished fence as text until it closes, so nothing flickers into a broken block.
import Markdown, { type MarkdownToJSX, RuleType } from 'markdown-to-jsx/react';
import 'highlight.js/styles/github.css';
import { memo } from 'react';
import { CopyButton } from '../copy.tsx';
import { highlighted } from './highlight.ts';

function CodeBlock({ text, lang }: { text: string; lang: string | undefined }) {
  const h = highlighted(text, lang);
  return (
    <div className="code-block" data-testid="code-block">
      <div className="code-head">
        <span className="muted small">{h?.language ?? lang ?? 'text'}</span>
        <CopyButton text={text} label="Copy the code" />
      </div>
      <pre>
        {h ? (
          // highlight.js escapes the code itself; its HTML is spans with class names only.
          // biome-ignore lint/security/noDangerouslySetInnerHtml: highlight.js output, escaped by it
          <code className={`hljs language-${h.language}`} dangerouslySetInnerHTML={{ __html: h.html }} />
        ) : (
          <code>{text}</code>
        )}
      </pre>
    </div>
  );
}

const OPTIONS: Partial<MarkdownToJSX.Options> = {
  disableParsingRawHTML: true,
  forceBlock: true,
  renderRule(next, node, _children, state) {
    if (node.type === RuleType.codeBlock)
      return <CodeBlock key={state.key} text={node.text} lang={node.lang || undefined} />;
    return next();
  },
};

/** The reply's markdown; memoised so a long thread re-renders only the message that changed. */
export const Reply = memo(function Reply({ text }: { text: string }) {
  return (
    <Markdown className="markdown" options={OPTIONS}>
      {text}
    </Markdown>
  );
});
