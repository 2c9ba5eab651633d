import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { open, seal } from './crypto.ts';

const kek = randomBytes(32);
const secret = 'sk-service-0123456789abcdef0123456789abcdef0123456789abcdef';

/** Flips one bit of one base64url part of a sealed value (index 1 iv, 2 tag, 3 ciphertext). */
function flip(sealed: string, part: number): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[part]!, 'base64url');
  bytes[0]! ^= 0x01;
  parts[part] = bytes.toString('base64url');
  return parts.join('.');
}

describe('AES-256-GCM seal/open', () => {
  it('round-trips and never contains the plaintext', () => {
    const sealed = seal(kek, secret, 'a:k');
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice(11));
    expect(open(kek, sealed, 'a:k')).toBe(secret);
  });

  it('uses a fresh random IV each time', () => {
    expect(seal(kek, secret, 'a:k')).not.toBe(seal(kek, secret, 'a:k'));
  });

  it.each([
    ['iv', 1],
    ['auth tag', 2],
    ['ciphertext', 3],
  ])('a tampered %s fails to open', (_, part) => {
    expect(() => open(kek, flip(seal(kek, secret, 'a:k'), part), 'a:k')).toThrow(/failed authentication/);
  });

  it('a ciphertext moved to another key (other additional data) fails to open', () => {
    expect(() => open(kek, seal(kek, secret, 'acct_1:key_1'), 'acct_1:key_2')).toThrow(
      /failed authentication/,
    );
  });

  it('another KEK fails to open', () => {
    expect(() => open(randomBytes(32), seal(kek, secret, 'a:k'), 'a:k')).toThrow(/failed authentication/);
  });

  it('rejects malformed values and short KEKs', () => {
    expect(() => open(kek, 'garbage', 'a:k')).toThrow(/unknown layout/);
    expect(() => open(kek, 'v1.AAAA.AAAA.AAAA', 'a:k')).toThrow(/unknown layout/);
    expect(() => seal(randomBytes(16), secret, 'a:k')).toThrow(/32 bytes/);
  });
});
