import { describe, expect, it } from 'vitest';
import { type CatalogueEntryInput, catalogueEntrySchema } from './entry.ts';
import { isCallableBy, isDisplayableTo, priceFor, type Viewer } from './visibility.ts';

const entry = (over: Partial<CatalogueEntryInput> = {}) =>
  catalogueEntrySchema.parse({
    id: 'Acme/Llama-3-8B',
    kind: 'chat',
    pricing: { USD: { input: '0.15', output: '0.60' } },
    created: 1_700_000_000,
    ...over,
  });

const viewer = (currency: string | null, grants: string[] = []): Viewer => ({
  currency,
  grants: new Set(grants),
});

describe('catalogue visibility', () => {
  it.each([
    // rule, what, entry overrides, viewer, callable (GET /v1/models + API), displayable (Playground card)
    ['CAT-4', 'priced in the account currency', {}, viewer('USD'), true, true],
    ['CAT-4', 'no price in the account currency', {}, viewer('EUR'), false, false],
    ['CAT-4', 'account without a currency', {}, viewer(null), false, false],
    ['CAT-4', 'currency code case must match exactly', {}, viewer('usd'), false, false],
    ['CAT-5', 'invite-only, not granted', { availability: 'inviteOnly' }, viewer('USD'), false, true],
    [
      'CAT-5',
      'invite-only, granted',
      { availability: 'inviteOnly' },
      viewer('USD', ['acme/llama-3-8b']),
      true,
      true,
    ],
    [
      'CAT-5',
      'invite-only, granted another model',
      { availability: 'inviteOnly' },
      viewer('USD', ['x']),
      false,
      true,
    ],
    [
      'CAT-4',
      'invite-only granted but unpriced',
      { availability: 'inviteOnly' },
      viewer('EUR', ['acme/llama-3-8b']),
      false,
      false,
    ],
    [
      'CAT-1',
      'coming soon is shown with a ribbon, not callable',
      { availability: 'comingSoon' },
      viewer('USD'),
      false,
      true,
    ],
  ] as const)('%s %s', (_rule, _what, over, v, callable, displayable) => {
    const e = entry(over as Partial<CatalogueEntryInput>);
    expect(isCallableBy(e, v)).toBe(callable);
    expect(isDisplayableTo(e, v)).toBe(displayable);
  });

  it('CAT-4 priceFor returns the price in the account currency only', () => {
    const e = entry({ pricing: { USD: { input: '1' }, EUR: { input: '0.9' } } });
    expect(priceFor(e, 'EUR')).toEqual({ input: '0.9' });
    expect(priceFor(e, 'GBP')).toBeNull();
    expect(priceFor(e, null)).toBeNull();
  });
});
