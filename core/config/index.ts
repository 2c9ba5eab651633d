// Typed configuration, parsed once from the environment at start-up, by owner: the settings every
// service reads (./shared.ts), the media store's (./media.ts), the proxy's (./proxy.ts) and the
// console's (./console.ts), the operator's (./operator.ts, with REDIS_URL and LOG_LEVEL only). Each service parses the schemas it uses, so a console never fails on a
// proxy setting and the other way round; the CLI and `make dev`, which start every service, and the
// tests parse them all (loadConfig). Every variable is listed in docs/operations.md
// "Configuration" with its owner (./owners.test.ts holds the table to these schemas). A bad value
// stops the process with a message naming the variable.
import { z } from 'zod';
import { consoleConfig, consoleRules } from './console.ts';
import { mediaConfig, mediaRules } from './media.ts';
import { operatorConfig } from './operator.ts';
import { proxyConfig } from './proxy.ts';
import { sharedConfig } from './shared.ts';

/** Each owner's settings, by the name docs/operations.md's "used by" column gives it. */
export const configOwners = {
  all: sharedConfig,
  media: mediaConfig,
  proxy: proxyConfig,
  console: consoleConfig,
  operator: operatorConfig,
} as const;

const proxySchema = z.object({ ...sharedConfig, ...mediaConfig, ...proxyConfig });
const consoleSchema = z.object({ ...sharedConfig, ...mediaConfig, ...consoleConfig });
const allSchema = z.object({ ...sharedConfig, ...mediaConfig, ...proxyConfig, ...consoleConfig });

/** The media store's settings (core/storage), which the proxy and the console both read. */
export type MediaConfig = z.infer<z.ZodObject<typeof mediaConfig>>;
export type ProxyConfig = z.infer<typeof proxySchema> & { kek: Buffer };
export type ConsoleConfig = Omit<z.infer<typeof consoleSchema>, 'CONSOLE_SECURE_COOKIES'> & {
  kek: Buffer;
  CONSOLE_SECURE_COOKIES: boolean;
};
/** Every service's settings (the CLI, `make dev`, the tests). */
export type Config = ProxyConfig & ConsoleConfig;

/** Plain http on a loopback name: the one place a session cookie need not be Secure. */
export const isLocalHttp = (url: string) =>
  /^http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(url.replace(/\/+$/, ''));

function parsed<T extends z.ZodType>(schema: T, env: NodeJS.ProcessEnv): z.infer<T> {
  const r = schema.safeParse(env);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid configuration:\n${problems}`);
  }
  return r.data;
}

/** The proxy's settings: shared, media, its own. */
export function loadProxyConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  const c = parsed(proxySchema.superRefine(mediaRules), env);
  return { ...c, kek: Buffer.from(c.MODELPLANE_KEK, 'hex') };
}

/** The console's settings: shared, media, its own. */
export function loadConsoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  const c = parsed(
    consoleSchema.superRefine((v, ctx) => {
      mediaRules(v, ctx);
      consoleRules(v, ctx);
    }),
    env,
  );
  return {
    ...c,
    CONSOLE_SECURE_COOKIES: c.CONSOLE_SECURE_COOKIES ?? !isLocalHttp(c.CONSOLE_PUBLIC_URL),
    kek: Buffer.from(c.MODELPLANE_KEK, 'hex'),
  };
}

/** Every service's settings, for what starts them all (the CLI, `make dev`) and the tests. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const c = parsed(
    allSchema.superRefine((v, ctx) => {
      mediaRules(v, ctx);
      consoleRules(v, ctx);
    }),
    env,
  );
  return {
    ...c,
    CONSOLE_SECURE_COOKIES: c.CONSOLE_SECURE_COOKIES ?? !isLocalHttp(c.CONSOLE_PUBLIC_URL),
    kek: Buffer.from(c.MODELPLANE_KEK, 'hex'),
  };
}
