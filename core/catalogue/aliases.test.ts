// Alias resolution and the collision rule, table-driven and pure (docs/models.md#aliases).
import { describe, expect, it } from 'vitest';
import { NameIndex, takenAliases } from './aliases.ts';
import { type CatalogueEntry, catalogueEntrySchema } from './entry.ts';

const entry = (id: string, aliases: string[], created = 1): CatalogueEntry =>
  catalogueEntrySchema.parse({ id, kind: 'chat', aliases, pricing: { USD: { input: '1' } }, created });

describe('NameIndex.resolve', () => {
  const index = new NameIndex([
    entry('Org/Big', ['claude-sonnet-*', 'gpt-5'], 1),
    entry('Org/Small', ['claude-haiku-*', 'claude-3-5-haiku-20241022', 'claude-*'], 2),
    // Newer and claims an alias Org/Big holds, and another model's id: neither is honoured.
    entry('Org/Late', ['gpt-5', 'org/big', 'late'], 3),
  ]);
  const cases: [string, string | undefined][] = [
    ['Org/Big', 'Org/Big'],
    ['org/big', 'Org/Big'], // an id beats any alias spelled the same
    ['GPT-5', 'Org/Big'], // case-insensitive; the older holder keeps it
    ['claude-3-5-haiku-20241022', 'Org/Small'],
    ['claude-sonnet-4-5-20250929', 'Org/Big'], // the narrowest pattern wins over claude-*
    ['claude-haiku-4-5', 'Org/Small'],
    ['claude-opus-4', 'Org/Small'], // only claude-* matches
    ['late', 'Org/Late'],
    ['claude', undefined], // a pattern's prefix includes its dash
    ['gpt-5-mini', undefined],
    ['nothing', undefined],
  ];
  it.each(cases)('%s → %s', (name, id) => {
    expect(index.resolve(name)?.id).toBe(id);
  });

  it('lists exact aliases with their holder, not patterns nor aliases shadowed by an id or an older holder', () => {
    expect(index.listedAliases().map((a) => [a.alias, a.entry.id])).toEqual([
      ['gpt-5', 'Org/Big'],
      ['claude-3-5-haiku-20241022', 'Org/Small'],
      ['late', 'Org/Late'],
    ]);
  });
});

describe('takenAliases', () => {
  const a = { source: 'Model/ns/a', id: 'A', aliases: ['x', 'shared'] };
  const b = { source: 'Model/ns/b', id: 'B', aliases: ['shared', 'a', 'y*'] };
  const everyone = [a, b];

  it('an alias equal to another model id is taken whatever the order; one an earlier model holds is taken', () => {
    expect(takenAliases(b, [a], everyone)).toEqual([
      { alias: 'shared', heldBy: 'Model/ns/a', as: 'alias' },
      { alias: 'a', heldBy: 'Model/ns/a', as: 'id' },
    ]);
  });

  it('the earlier model keeps a shared alias', () => {
    expect(takenAliases(a, [], everyone)).toEqual([]);
  });
});
