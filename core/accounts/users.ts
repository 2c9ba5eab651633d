// Console users: an email and a password (scrypt) bound to one account. Emails are unique and
// compared lower-cased; the password is never stored or returned, only its salted scrypt hash.
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { invalidRequest } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';

export interface User {
  id: string;
  email: string;
  accountId: string;
  createdAt: string;
}

export const MIN_PASSWORD_LENGTH = 8;
// scrypt's cost grows with input; a cap keeps one login from being a denial of service.
const MAX_PASSWORD_LENGTH = 1024;
const KEY_LENGTH = 64;
// N=2^15 is OWASP's current minimum for scrypt; maxmem is raised to fit it (128·N·r bytes).
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function derive(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash so they can be raised later. */
async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

async function checkPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

// Verifying an unknown email still runs scrypt once, so response time does not reveal which emails exist.
let dummyHash: Promise<string> | undefined;
const dummy = () => {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return dummyHash;
};

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function parseUser(h: Record<string, string>): User | null {
  if (!h.id || !h.email || !h.accountId || !h.createdAt) return null;
  return { id: h.id, email: h.email, accountId: h.accountId, createdAt: h.createdAt };
}

export class Users {
  constructor(private readonly redis: Redis) {}

  async create(input: { email: string; password: string; accountId: string }): Promise<User> {
    const email = typeof input.email === 'string' ? normalizeEmail(input.email) : '';
    if (!EMAIL_PATTERN.test(email) || email.length > 254)
      throw invalidRequest('email is not a valid address', 'email');
    if (typeof input.password !== 'string' || input.password.length < MIN_PASSWORD_LENGTH) {
      throw invalidRequest(`password must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password');
    }
    if (input.password.length > MAX_PASSWORD_LENGTH) {
      throw invalidRequest(`password must be at most ${MAX_PASSWORD_LENGTH} characters`, 'password');
    }
    if (typeof input.accountId !== 'string' || input.accountId === '') {
      throw invalidRequest('accountId is required', 'accountId');
    }
    const user: User = {
      id: newId('user'),
      email,
      accountId: input.accountId,
      createdAt: new Date().toISOString(),
    };
    const passwordHash = await hashPassword(input.password);
    // SET NX claims the email: two sign-ups with one address cannot both succeed.
    if ((await this.redis.set(globalKeys.userByEmail(email), user.id, 'NX')) === null) {
      throw invalidRequest('a user with this email already exists', 'email');
    }
    await this.redis.hset(globalKeys.user(user.id), { ...user, passwordHash });
    return user;
  }

  /** The user for a correct email and password, else null. */
  async verify(email: string, password: string): Promise<User | null> {
    if (typeof email !== 'string' || typeof password !== 'string' || password.length > MAX_PASSWORD_LENGTH) {
      return null;
    }
    const id = await this.redis.get(globalKeys.userByEmail(normalizeEmail(email)));
    const stored = id === null ? {} : await this.redis.hgetall(globalKeys.user(id));
    const ok = await checkPassword(password, stored.passwordHash ?? (await dummy()));
    return ok ? parseUser(stored) : null;
  }

  async byEmail(email: string): Promise<User | null> {
    if (typeof email !== 'string') return null;
    const id = await this.redis.get(globalKeys.userByEmail(normalizeEmail(email)));
    return id === null ? null : this.get(id);
  }

  async get(id: string): Promise<User | null> {
    return parseUser(await this.redis.hgetall(globalKeys.user(id)));
  }
}
