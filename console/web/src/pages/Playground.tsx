// The Playground (SPEC "What the service does" 3, 4, 6; issue 19; CON-8, CON-9, CON-10, BILL-7):
// the service's second face. Every run is a call from this browser straight to the public API with
// one of the account's keys, so it spends the same credits and shows in usage under that key.
// Tabs: the model cards, Run a prompt, Images, Videos, Compare; the tab and a compare set-up are in
// the page address.
import { useState } from 'react';
import '../playground/playground.css';
import type { Me, PricedModel } from '../api.ts';
import { Compare } from '../playground/Compare.tsx';
import { textModels, useCatalogue } from '../playground/catalogue.ts';
import { type CompareSetup, setupFrom, setupQuery } from '../playground/compare-setup.ts';
import { loadConversation } from '../playground/conversation.ts';
import { Images } from '../playground/Images.tsx';
import { KeyPicker, usePlaygroundKey } from '../playground/keys.tsx';
import { ModelCards } from '../playground/ModelCards.tsx';
import { Run } from '../playground/Run.tsx';
import { Videos } from '../playground/Videos.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { Tabs } from '../Tabs.tsx';
import { useTitle } from '../title.ts';

const TABS = ['Models', 'Run', 'Images', 'Videos', 'Compare'] as const;
type Tab = (typeof TABS)[number];

export function Playground({ me }: { me: Me }) {
  useTitle('Playground');
  const { query } = useLocation();
  const models = useCatalogue();
  const key = usePlaygroundKey();
  const tab: Tab = TABS.find((t) => t.toLowerCase() === query.get('tab')) ?? 'Models';
  const text = textModels(models ?? []);
  // The model a card's Try chose, else the kept conversation's (playground/conversation.ts).
  const [model, setModel] = useState(
    () => query.get('model') ?? loadConversation(localStorage, me.account.id)?.model ?? '',
  );
  const runModel = text.find((m) => m.id === model)?.id ?? text[0]?.id ?? '';
  const [setup, setSetup] = useState<CompareSetup | null>(null);
  const compare =
    setup ??
    (models
      ? setupFrom(
          query,
          text.map((m) => m.id),
        )
      : null);
  const chooseModel = (id: string) => {
    setModel(id);
    // The address names the chosen model, so a reload keeps it (a card's Try put one there).
    const q = new URLSearchParams(location.search);
    q.set('model', id);
    history.replaceState(null, '', `/playground?${q}`);
  };
  const go = (t: Tab, extra = '') => navigate(`/playground?tab=${t.toLowerCase()}${extra}`);
  const onSetup = (s: CompareSetup) => {
    setSetup(s);
    // The set-up lives in the address (replaceState: typing is not a history entry per key).
    history.replaceState(null, '', `/playground?${setupQuery(s)}`);
  };
  const currency = me.account.currency;
  const common = { apiBase: me.apiBaseUrl, secret: key.secret, currency };

  return (
    <>
      <h1>Playground</h1>
      <div className="row spread">
        <p className="muted small">
          Calls go from this browser to <code>{me.apiBaseUrl}</code> with the key chosen here: they spend the
          account’s credits and show in <Link href={`/usage?keyId=${key.keyId}`}>Inference API Usage</Link>{' '}
          under that key.
        </p>
        <KeyPicker keys={key.keys} keyId={key.keyId} onChange={key.setKeyId} />
      </div>
      {key.error && (
        <p className="error" role="alert">
          {key.error}
        </p>
      )}
      <Tabs
        label="Playground"
        items={TABS}
        value={tab}
        onChange={(t) => go(t)}
        idPrefix="playground"
        controls="playground-panel"
      />
      <div id="playground-panel" role="tabpanel" aria-labelledby={`playground-tab-${TABS.indexOf(tab)}`}>
        {tab === 'Models' && (
          <ModelCards
            models={models}
            currency={currency}
            onTry={(m: PricedModel) => {
              if (m.kind === 'chat') {
                setModel(m.id);
                go('Run', `&model=${encodeURIComponent(m.id)}`);
              } else go(m.kind === 'image' ? 'Images' : 'Videos');
            }}
          />
        )}
        {tab === 'Run' &&
          (text.length === 0 ? (
            <p>{models === null ? 'Loading the models…' : 'The account has no text model it can run.'}</p>
          ) : (
            <Run {...common} accountId={me.account.id} models={text} model={runModel} onModel={chooseModel} />
          ))}
        {tab === 'Images' && <Images {...common} accountId={me.account.id} models={models ?? []} />}
        {tab === 'Videos' && <Videos {...common} accountId={me.account.id} models={models ?? []} />}
        {tab === 'Compare' &&
          (compare && text.length > 0 ? (
            <Compare {...common} models={text} setup={compare} onSetup={onSetup} />
          ) : (
            <p>{models === null ? 'Loading the models…' : 'The account has no text model it can run.'}</p>
          ))}
      </div>
    </>
  );
}
