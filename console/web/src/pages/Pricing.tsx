// Pricing (issue "Console" item 4; CON-11): every model the account can see, its prices in the
// account currency, context length and availability.
import { useEffect, useState } from 'react';
import { api, type Me, type PricedModel } from '../api.ts';
import { count, exactMoney } from '../format.ts';
import { ScrollTable } from '../parts.tsx';
import { useTitle } from '../title.ts';

const AVAILABILITY: Record<string, string> = {
  available: 'Available',
  comingSoon: 'Coming Soon',
  inviteOnly: 'By Invitation',
};

const KINDS: Record<string, string> = {
  chat: 'Text',
  embedding: 'Embeddings',
  image: 'Image',
  video: 'Video',
};

function prices(m: PricedModel, currency: string | null) {
  const p = m.price;
  const per = (v: string | undefined, unit: string) =>
    v === undefined ? '—' : `${exactMoney(v, currency)} ${unit}`;
  switch (m.kind) {
    case 'image':
      return [per(p.perImage, 'per image'), '', ''];
    case 'video':
      return [per(p.perSecond, 'per second'), '', ''];
    default:
      return [
        per(p.input, ''),
        m.kind === 'chat' ? per(p.cachedInput ?? p.input, '') : '—',
        m.kind === 'chat' ? per(p.output, '') : '—',
      ];
  }
}

export function Pricing({ me }: { me: Me }) {
  useTitle('Pricing');
  const [models, setModels] = useState<PricedModel[] | null>(null);
  useEffect(() => {
    void api.pricing().then((p) => setModels(p.models));
  }, []);
  const currency = me.account.currency;
  return (
    <>
      <h1>Pricing</h1>
      <p className="muted small">
        Text and embeddings per 1M tokens (cached input tokens are part of the input, charged at the cached
        rate); images per generation; video per second of output, charged when the job is created.
        {currency ? ` Prices in ${currency}.` : ''}
      </p>
      <ScrollTable head={['Model', 'Kind', 'Context', 'Input / price', 'Cached', 'Output', 'Availability']}>
        {(models ?? []).map((m) => {
          const [a, b, c] = prices(m, currency);
          return (
            <tr key={m.id}>
              <th scope="row">
                <code>{m.id}</code>
              </th>
              <td>{KINDS[m.kind] ?? m.kind}</td>
              <td>{m.contextLength === null ? '—' : count(m.contextLength)}</td>
              <td>{a}</td>
              <td>{b || '—'}</td>
              <td>{c || '—'}</td>
              <td>
                <span className={`badge ${m.availability}`}>
                  {AVAILABILITY[m.availability] ?? m.availability}
                </span>
              </td>
            </tr>
          );
        })}
      </ScrollTable>
      {models !== null && models.length === 0 && (
        <p>
          {currency
            ? 'No model is priced in your currency yet.'
            : 'Set the country in the profile to see prices.'}
        </p>
      )}
    </>
  );
}
