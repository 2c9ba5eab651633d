// The chat requests the harness's engines received while a test's action ran: what the proxy
// actually sent upstream (tools left out, output bounds lowered, …).
import type { Harness } from './harness.ts';

export async function engineChatRequests<T>(
  h: Harness,
  go: () => Promise<T>,
): Promise<{ out: T; sent: Record<string, unknown>[] }> {
  const before = h.sims.map((s) => s.received().length);
  const out = await go();
  const sent = h.sims
    .flatMap((s, i) => s.received().slice(before[i]))
    .filter((r) => r.path === '/v1/chat/completions')
    .map((r) => r.json as Record<string, unknown>);
  return { out, sent };
}
