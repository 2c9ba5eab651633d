// The kinds of value a setting may take, each checked at start so a typo stops the process with
// a message naming the variable (./config.ts parses the settings with them).
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseRedisTarget } from '../redis/client.ts';

export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
export const csv = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/**
 * Addresses/CIDRs (or proxy-addr's names loopback, linklocal, uniquelocal); '' → false (trust no
 * forwarding header). No hop count: it cannot check who the immediate peer is, so a client that
 * reaches the console directly could still name its own address (fastify refuses it too).
 */
export const trustedProxies = z
  .string()
  .default('')
  .transform((s, ctx): string[] | false => {
    const list = s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (list.length === 0) return false;
    for (const entry of list) {
      if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) continue;
      const [addr, bits, ...rest] = entry.split('/');
      const family = isIP(addr ?? '');
      const maxBits = family === 6 ? 128 : 32;
      if (
        family === 0 ||
        rest.length > 0 ||
        (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))
      )
        ctx.addIssue({
          code: 'custom',
          message: `"${entry}" is not an address or a CIDR (such as 10.0.0.0/8)`,
        });
    }
    return list;
  });

/**
 * One server (`redis://host:port`) or a cluster by some of its nodes
 * (`redis+cluster://host1:port1,host2:port2`): checked here, at start, so a typo stops the process.
 */
export const redisUrl = z
  .string()
  .default('redis://127.0.0.1:6379')
  .superRefine((url, ctx) => {
    try {
      parseRedisTarget(url);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });
