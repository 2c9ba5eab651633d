// "View code" (issue 19 item 3; issue 37 item 3): the call exactly as it would be sent, as CURL,
// Python or TypeScript, in a dialog wide enough for it; long lines wrap rather than being cut off
// (the text copied is the code as written).
import { useState } from 'react';
import { CopyButton } from '../copy.tsx';
import { Dialog } from '../Dialog.tsx';
import { Tabs } from '../Tabs.tsx';
import type { ChatRequest, Dialect } from './calls.ts';
import { CODE_LANGUAGES, type CodeLanguage, callCode, KEY_VARIABLE } from './code.ts';

export function ViewCode(props: {
  apiBase: string;
  dialect: Dialect;
  request: ChatRequest;
  onClose: () => void;
}) {
  const [language, setLanguage] = useState<CodeLanguage>('CURL');
  const code = callCode(language, props.dialect, props.apiBase, props.request);
  return (
    <Dialog title="View code" onClose={props.onClose} wide>
      <Tabs
        label="Language"
        items={CODE_LANGUAGES}
        value={language}
        onChange={setLanguage}
        idPrefix="code"
        controls="code-panel"
      />
      <div id="code-panel" role="tabpanel">
        <p className="muted small">
          The key is read from <code>{KEY_VARIABLE}</code>.
        </p>
        <pre data-testid="code" className="wrap">
          <code>{code}</code>
        </pre>
        <CopyButton text={code} label="Copy the code" />
      </div>
      <button type="button" onClick={props.onClose}>
        Close
      </button>
    </Dialog>
  );
}
