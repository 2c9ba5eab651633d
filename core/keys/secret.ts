// API key secrets: generation, format checks, lookup hash and masking. Pure; no I/O.
import { hash, randomBytes } from 'node:crypto';

/** Bounds for any secret we accept, current or legacy (imported from another gateway). */
export const MIN_SECRET_LENGTH = 20;
export const MAX_SECRET_LENGTH = 256;
const SECRET_RANDOM_BYTES = 24;

export const BRAND_PATTERN = /^[a-z0-9]{1,32}$/;

/** `^sk-<brand>-[0-9a-f]{48}$` (KEY-1). */
export function currentKeyPattern(brand: string): RegExp {
  // The brand is validated rather than escaped: it is config, and a bad one should stop start-up.
  if (!BRAND_PATTERN.test(brand))
    throw new Error(`invalid key brand '${brand}': lowercase letters and digits`);
  return new RegExp(`^sk-${brand}-[0-9a-f]{${SECRET_RANDOM_BYTES * 2}}$`);
}

export function generateSecret(brand: string): string {
  if (!BRAND_PATTERN.test(brand))
    throw new Error(`invalid key brand '${brand}': lowercase letters and digits`);
  return `sk-${brand}-${randomBytes(SECRET_RANDOM_BYTES).toString('hex')}`;
}

/**
 * True when `secret` could be a key of any format: 20..256 characters, each printable ASCII other
 * than space (0x21..0x7e). Anything else — a pasted key with a stray space, tab or newline — is
 * rejected as given: trimming would make a wrong key work by accident (AUTH-5).
 */
export function isWellFormedSecret(secret: unknown): secret is string {
  if (typeof secret !== 'string') return false;
  if (secret.length < MIN_SECRET_LENGTH || secret.length > MAX_SECRET_LENGTH) return false;
  for (let i = 0; i < secret.length; i++) {
    const c = secret.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/**
 * SHA-256 hex: the only form of a secret used as a Redis key or published. The proxy hashes every
 * request's key; one-shot `crypto.hash` is about 2.5x cheaper than a `createHash` object.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function lastFour(secret: string): string {
  return secret.slice(-4);
}

/** What the keys table shows in the Key column (KEY-4). */
export function maskSecret(last4: string): string {
  return `sk-...${last4}`;
}
