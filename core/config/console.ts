// The console's settings (console/): its address, the API Endpoint it shows, sessions and sign-in,
// and billing (top-ups, Stripe, auto top-up, the service ledger API). Listed in docs/operations.md
// "Configuration".
import { z } from 'zod';
import { parseDecimalToNano } from '../money.ts';
import { port, trustedProxies } from './values.ts';

export const consoleConfig = {
  // The console (console/): its address, the base URL it shows as the API Endpoint, its sessions.
  CONSOLE_HOST: z.string().default('0.0.0.0'),
  CONSOLE_PORT: port(3000),
  CONSOLE_API_BASE_URL: z.string().url().default('http://localhost:8080/v1'),
  /**
   * A request to the console must arrive whole (headers and body) within this; its headers within
   * the smaller of this and 15 s. Every console request is small, so a slow or silent client is
   * cut off rather than left holding a socket.
   */
  CONSOLE_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(500).default(30_000),
  /** A session lasts this long from sign-in (revocable at any time: sign-out, or deleting it in Redis). */
  CONSOLE_SESSION_TTL_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(7 * 24 * 3_600_000),
  /**
   * `Secure` session cookies. Unset: on, unless CONSOLE_PUBLIC_URL is plain http on localhost
   * (`make dev`), where a browser would otherwise get no cookie it sends back (issue 24 item 8).
   */
  CONSOLE_SECURE_COOKIES: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
  /** Failed sign-ins allowed per email, and per client address, in 15 minutes. */
  CONSOLE_SIGNIN_FAILURES_PER_EMAIL: z.coerce.number().int().min(1).default(5),
  CONSOLE_SIGNIN_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).default(30),
  // Security (issue 24): who may say where a request came from, and where metrics are served.
  /**
   * The load balancers in front of the console whose X-Forwarded-For is believed: their
   * addresses or CIDRs (`10.0.0.0/8,192.168.1.7`). Unset: none, so a client cannot choose the
   * address sign-in throttling counts against.
   */
  CONSOLE_TRUSTED_PROXIES: trustedProxies,
  // Billing (console/routes/billing.ts, core/payments): top-ups and the service ledger API.
  /**
   * The console's address as browsers reach it: invitation links point here, and Stripe Checkout
   * sends the payer back to `<it>/billing`.
   */
  CONSOLE_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'an http(s) URL such as https://console.example.com' })
    .default('http://localhost:3000')
    .transform((u) => u.replace(/\/+$/, '')),
  /** How accounts top up: `approval` (an operator approves with the CLI), `stripe` (Checkout), or both. */
  CONSOLE_PAYMENT_PROVIDERS: z
    .string()
    .default('approval')
    .transform((s) => [
      ...new Set(
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(z.enum(['stripe', 'approval'])).min(1, 'name at least one of stripe, approval')),
  /** Stripe's secret (or restricted) API key; required when the providers include stripe. */
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_\S+$/, 'a secret key (sk_...) or restricted key (rk_...), not a publishable pk_ key')
    .optional(),
  /** The signing secret of the webhook endpoint (`whsec_...`), which proves an event came from Stripe. */
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_\S+$/, 'the endpoint signing secret, whsec_...')
    .optional(),
  /** Another address for Stripe's API (stripe-mock in tests); unset: api.stripe.com. */
  STRIPE_API_URL: z
    .url({ protocol: /^https?$/, error: 'an http(s) URL such as http://127.0.0.1:12111' })
    .optional(),
  /**
   * Auto top-up (Stripe only): how often each console instance checks the balances of accounts
   * with it on (0: this instance does not check), and how many failed charges in a row pause it.
   */
  CONSOLE_AUTO_TOPUP_CHECK_MS: z.coerce.number().int().min(0).default(10_000),
  CONSOLE_AUTO_TOPUP_MAX_FAILURES: z.coerce.number().int().min(1).default(3),
  /** Smallest and largest top-up, in units of the account currency (decimal strings). */
  CONSOLE_TOPUP_MIN: z
    .string()
    .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a decimal amount such as "5" or "2.5"')
    .default('5'),
  CONSOLE_TOPUP_MAX: z
    .string()
    .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a decimal amount such as "10000"')
    .default('10000'),
  /**
   * The bearer token of the service ledger API (/ledger/v1), for the operator's other products that
   * spend the same credits. Unset: the API is off (404). At least 32 characters: openssl rand -hex 32.
   */
  CONSOLE_SERVICE_TOKEN: z
    .string()
    .min(32, 'at least 32 characters; generate with: openssl rand -hex 32')
    .regex(/^\S+$/, 'no spaces: it is sent as `Authorization: Bearer <token>`')
    .optional(),
};

/** What the console's billing settings must say together. */
export function consoleRules(
  c: {
    CONSOLE_PAYMENT_PROVIDERS: string[];
    STRIPE_SECRET_KEY?: string | undefined;
    STRIPE_WEBHOOK_SECRET?: string | undefined;
    CONSOLE_TOPUP_MIN: string;
    CONSOLE_TOPUP_MAX: string;
  },
  ctx: z.RefinementCtx,
): void {
  if (c.CONSOLE_PAYMENT_PROVIDERS.includes('stripe')) {
    for (const name of ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'] as const)
      if (c[name] === undefined)
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'required when CONSOLE_PAYMENT_PROVIDERS includes stripe',
        });
  }
  if (parseDecimalToNano(c.CONSOLE_TOPUP_MIN) > parseDecimalToNano(c.CONSOLE_TOPUP_MAX))
    ctx.addIssue({
      code: 'custom',
      path: ['CONSOLE_TOPUP_MAX'],
      message: 'must not be below CONSOLE_TOPUP_MIN',
    });
}
