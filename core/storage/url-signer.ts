// Signed, expiring URLs for objects the proxy serves itself (GET /files/<key>?expires=&sig=): an
// HMAC-SHA256 over the key and the expiry, checked in constant time. The secret is derived from
// the key-encryption key (HKDF), so a fleet of proxies agrees on it with no extra configuration.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export class UrlSigner {
  private readonly secret: Buffer;

  constructor(kek: Buffer) {
    this.secret = Buffer.from(hkdfSync('sha256', kek, Buffer.alloc(0), 'modelplane media urls', 32));
  }

  /** `?expires=<unix s>&sig=<base64url>` for `key`. */
  query(key: string, expiresAtMs: number): string {
    const expires = Math.ceil(expiresAtMs / 1000);
    return `expires=${expires}&sig=${this.sign(key, expires)}`;
  }

  /** 'ok', or why not: a wrong signature and an expired one are both refused (403). */
  check(
    key: string,
    expires: string | undefined,
    sig: string | undefined,
    nowMs = Date.now(),
  ): 'ok' | 'bad' | 'expired' {
    if (expires === undefined || sig === undefined || !/^\d{1,12}$/.test(expires)) return 'bad';
    const want = Buffer.from(this.sign(key, Number(expires)));
    const got = Buffer.from(sig);
    if (got.length !== want.length || !timingSafeEqual(got, want)) return 'bad';
    return Number(expires) * 1000 <= nowMs ? 'expired' : 'ok';
  }

  private sign(key: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expires}`).digest('base64url');
  }
}
