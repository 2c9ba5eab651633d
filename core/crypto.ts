// Envelope for values that must be readable again but never stored in clear (Show Key): AES-256-GCM
// under the key-encryption key from config. The caller's `aad` binds a ciphertext to its owner, so
// a sealed value copied onto another record fails to open instead of revealing the wrong secret.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
// A version prefix lets us change algorithm or layout later without guessing at old values.
const VERSION = 'v1';

function checkKek(kek: Buffer): void {
  if (kek.length !== 32) throw new Error(`KEK must be 32 bytes, got ${kek.length}`);
}

/** Encrypts `plaintext`; returns `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export function seal(kek: Buffer, plaintext: string, aad: string): string {
  checkKek(kek);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, kek, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv, tag, ciphertext]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.');
}

/** Decrypts a value made by seal(). Throws if it was altered, moved (other aad) or sealed under another KEK. */
export function open(kek: Buffer, sealed: string, aad: string): string {
  checkKek(kek);
  const parts = sealed.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new Error('sealed value has an unknown layout');
  const [iv, tag, ciphertext] = parts.slice(1).map((p) => Buffer.from(p, 'base64url')) as [
    Buffer,
    Buffer,
    Buffer,
  ];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES)
    throw new Error('sealed value has an unknown layout');
  const decipher = createDecipheriv(ALGORITHM, kek, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch (cause) {
    throw new Error('sealed value failed authentication (tampered, moved or wrong KEK)', { cause });
  }
}
