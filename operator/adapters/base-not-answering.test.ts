// An adapter whose base pod is ready to Kubernetes while its engine does not answer (issue 47.10):
// the operator's own observe, plan and apply (./apply.ts, ./reconcile.ts) against a real HTTP engine on loopback that
// refuses GET /v1/models, and a port nothing listens on. The Model says the engine does not
// answer, with the error, not "no ready pod".
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import type { Model } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { applyAdapterStep, observeBasePods } from './apply.ts';
import { planAdapterStep } from './reconcile.ts';

const base = chatModel('base', { id: 'Acme/Base', engine: { type: 'simulator', lora: { maxLoras: 4 } } });
const adapter: Model = chatModel('tone', {
  id: 'Acme/Tone',
  engine: undefined,
  capabilities: {},
  adapter: { base: 'base', source: '/adapters/tone' },
  pricing: { USD: { input: '3', output: '5' } },
});

let server: Server;
let sick: string;
beforeAll(async () => {
  // Up, and answering nothing useful: as vLLM does while its engine core is dead.
  server = createServer((_req, res) => res.writeHead(503).end('engine core dead'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  sick = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function adapterCondition(urls: string[]) {
  const now = new Date().toISOString();
  const planned = planModel(adapter, { deployment: null, serviceExists: false, endpointSlices: [], now });
  const plan = await applyAdapterStep(
    planAdapterStep(adapter, planned, base, await observeBasePods(urls), now),
  );
  return plan.status?.conditions?.find((c) => c.type === 'AdapterLoaded');
}

describe('an adapter on a base whose engine does not answer', () => {
  it('47.10 a ready base pod whose engine refuses GET /v1/models: BaseNotAnswering with its answer, not "no ready pod"', async () => {
    const c = await adapterCondition([sick]);
    expect(c).toMatchObject({ status: 'False', reason: 'BaseNotAnswering' });
    expect(c?.message).toContain('1 ready pod(s), but no engine answers GET /v1/models');
    expect(c?.message).toContain('503');
  });

  it('47.10 a ready base pod nothing listens on: BaseNotAnswering too; with no ready pod at all, NoReadyBasePods', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    expect((await adapterCondition([url]))?.reason).toBe('BaseNotAnswering');
    expect((await adapterCondition([]))?.reason).toBe('NoReadyBasePods');
  });
});
