// The metering Lua scripts, read once from ./lua at import. Each script is common.lua (shared
// helpers) and windows.lua followed by the operation's own file, so every operation stays one atomic script.
import { readFileSync } from 'node:fs';
import type { Redis } from '../redis/client.ts';
import { LuaScript } from '../redis/lua.ts';

const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
// windows.lua (the keys' rate windows) follows common.lua: void_hold, in common, gives a hold's
// share of them back, so every script that can void a hold has them.
const common = `${read('common.lua')}\n${read('windows.lua')}`;
const load = (name: string) => new LuaScript(`${common}\n${read(`${name}.lua`)}`, name);

export const scripts = {
  reserve: load('reserve'),
  settle: load('settle'),
  release: load('release'),
  charge: load('charge'),
  refund: load('refund'),
  topUp: load('topup'),
  renew: load('renew'),
  sweep: load('sweep'),
  extendLease: load('extend_lease'),
  settleBatch: load('settle_batch'),
  releaseLease: load('release_lease'),
} as const;

/** Loads every metering script into the server's script cache (see LuaScript.load). */
export async function loadMeteringScripts(redis: Redis): Promise<void> {
  await Promise.all(Object.values(scripts).map((s) => s.load(redis)));
}
