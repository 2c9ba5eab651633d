import { describe, expect, it } from 'vitest';
import {
  currentKeyPattern,
  generateSecret,
  hashSecret,
  isWellFormedSecret,
  lastFour,
  maskSecret,
} from './secret.ts';

describe('key secrets', () => {
  it('KEY-1 a new secret is sk-<brand>- followed by 48 lowercase hex characters', () => {
    const pattern = currentKeyPattern('service');
    expect(pattern.source).toBe('^sk-service-[0-9a-f]{48}$');
    const secrets = new Set(Array.from({ length: 200 }, () => generateSecret('service')));
    expect(secrets.size).toBe(200);
    for (const s of secrets) expect(s).toMatch(pattern);
    expect(generateSecret('acme2')).toMatch(/^sk-acme2-[0-9a-f]{48}$/);
    expect(generateSecret('acme2')).not.toMatch(pattern);
  });

  it('KEY-1 the pattern rejects near misses', () => {
    const pattern = currentKeyPattern('service');
    const hex = 'a'.repeat(48);
    for (const bad of [
      `sk-service-${'a'.repeat(47)}`,
      `sk-service-${'a'.repeat(49)}`,
      `sk-service-${'A'.repeat(48)}`,
      `sk-other-${hex}`,
      ` sk-service-${hex}`,
      `sk-service-${hex}\n`,
    ]) {
      expect(bad).not.toMatch(pattern);
    }
  });

  it('refuses a brand that is not lowercase letters and digits', () => {
    expect(() => currentKeyPattern('a.b')).toThrow(/brand/);
    expect(() => generateSecret('')).toThrow(/brand/);
  });

  it.each([
    ['current format', `sk-service-${'0'.repeat(48)}`, true],
    ['legacy format', 'sk-abc1234567890abcdef', true],
    ['exactly 20 characters', 'x'.repeat(20), true],
    ['exactly 256 characters', 'x'.repeat(256), true],
    ['19 characters', 'x'.repeat(19), false],
    ['257 characters', 'x'.repeat(257), false],
    ['AUTH-5 leading space', ` sk-service-${'0'.repeat(48)}`, false],
    ['AUTH-5 trailing space', `sk-service-${'0'.repeat(48)} `, false],
    ['AUTH-5 trailing newline', `sk-service-${'0'.repeat(48)}\n`, false],
    ['AUTH-5 trailing CRLF', `sk-service-${'0'.repeat(48)}\r\n`, false],
    ['AUTH-5 tab inside', `sk-service-\t${'0'.repeat(48)}`, false],
    ['NUL', `sk-service-${'0'.repeat(47)}\0`, false],
    ['DEL', `sk-service-${'0'.repeat(47)}\x7f`, false],
    ['non-ASCII', `sk-service-${'0'.repeat(47)}é`, false],
    ['no-break space', `sk-service-${'0'.repeat(47)}\u00a0`, false],
  ])('well-formed: %s → %s', (_, secret, ok) => {
    expect(isWellFormedSecret(secret)).toBe(ok);
  });

  it('hashes to sha256 hex and masks to the last four characters', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(lastFour(`sk-service-${'0'.repeat(44)}ab12`)).toBe('ab12');
    expect(maskSecret('ab12')).toBe('sk-...ab12');
  });
});
