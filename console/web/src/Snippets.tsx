// Sample API Implementation (CON-4): a task, a language and a model of the right kind from the
// account's catalogue; the snippet (./snippets.ts) is pre-filled with the endpoint and that model.
import { useEffect, useState } from 'react';
import { api } from './api.ts';
import { CopyButton } from './copy.tsx';
import {
  INPUT_IMAGE,
  KEY_VARIABLE,
  LANGUAGES,
  type Language,
  type ModelInfo,
  modelsFor,
  snippet,
  TASKS,
  type Task,
} from './snippets.ts';
import { Tabs } from './Tabs.tsx';

export function Snippets({ base }: { base: string }) {
  const [models, setModels] = useState<ModelInfo[]>([]);
  const [task, setTask] = useState<Task>('Text Generation');
  const [language, setLanguage] = useState<Language>('Python');
  const [chosen, setChosen] = useState<Partial<Record<Task, string>>>({});
  useEffect(() => {
    void api.pricing().then((p) => setModels(p.models));
  }, []);
  const fitting = modelsFor(task, models);
  const model = fitting.find((m) => m.id === chosen[task])?.id ?? fitting[0]?.id;
  const text = model === undefined ? null : snippet(task, language, base, model);
  return (
    <section aria-labelledby="samples" className="samples">
      <h2 id="samples">Sample API Implementation</h2>
      <Tabs
        label="Task"
        items={TASKS}
        value={task}
        onChange={setTask}
        idPrefix="task"
        controls="sample-panel"
      />
      <div className="row">
        <Tabs
          label="Language"
          items={LANGUAGES}
          value={language}
          onChange={setLanguage}
          idPrefix="lang"
          controls="sample-panel"
        />
        <label className="inline">
          Model
          <select
            value={model ?? ''}
            disabled={fitting.length === 0}
            onChange={(e) => setChosen({ ...chosen, [task]: e.target.value })}
          >
            {fitting.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div id="sample-panel" role="tabpanel" aria-label={`${task} in ${language}`}>
        {text === null ? (
          <p>No model in your catalogue can do {task.toLowerCase()} yet.</p>
        ) : (
          <>
            <pre data-testid="snippet" data-task={task} data-language={language}>
              <code>{text}</code>
            </pre>
            <div className="row">
              <CopyButton text={text} label="Copy the sample" />
              <span className="muted small">
                Set <code>{KEY_VARIABLE}</code> to one of your keys
                {task === 'Image Edit' || task === 'Image to Video' ? (
                  <>
                    {' '}
                    and put an image at <code>{INPUT_IMAGE}</code>
                  </>
                ) : null}
                .
              </span>
            </div>
          </>
        )}
      </div>
    </section>
  );
}
