// The usual setup of a test file that needs Redis: one server started before its tests and
// stopped after them, and a client to it. Read `server` and `redis` inside tests and hooks.

import { afterAll, beforeAll } from 'vitest';
import type { Redis } from '../../core/redis/client.ts';
import { startRedis, type TestRedis } from './redis.ts';

export interface FileRedis {
  readonly server: TestRedis;
  readonly redis: Redis;
}

export function redisForFile(): FileRedis {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
  });
  afterAll(async () => server?.stop());
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('Redis is started in beforeAll: read it inside tests and hooks');
    return v;
  };
  return {
    get server() {
      return started(server);
    },
    get redis() {
      return started(redis);
    },
  };
}
