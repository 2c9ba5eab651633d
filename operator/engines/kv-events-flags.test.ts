// A vLLM chat Model publishes its KV events (docs/routing.md): the flag vLLM 0.32 reads, the
// container ports and the Service ports the EndpointSlice carries to the catalogue. A simulator
// chat Model's pods publish the same wire on the same ports, with the simulator's own flags.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import { kvEventAddresses } from '../fleet/kv-events.ts';
import type { EngineSpec } from '../model/model.ts';
import { serviceFor } from '../reconcile/objects.ts';
import { engineTemplate } from './index.ts';

const model = (engine: EngineSpec, kind: 'chat' | 'embedding' = 'chat') =>
  chatModel('llama', { engine, kind, servedName: 'llama-8b' });

describe('vLLM KV events', () => {
  it('a chat Model: --kv-events-config (PUB, replay, topic kv@<served name>), container and Service ports', () => {
    const m = model({ type: 'vllm' });
    const { container } = engineTemplate(m.spec, m.spec.engine!);
    const args = container.args ?? [];
    const at = args.indexOf('--kv-events-config');
    expect(JSON.parse(args[at + 1] ?? '')).toEqual({
      enable_kv_cache_events: true,
      publisher: 'zmq',
      endpoint: 'tcp://*:5557',
      replay_endpoint: 'tcp://*:5558',
      topic: 'kv@llama-8b',
    });
    expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 8000],
      ['kv-events', 5557],
      ['kv-replay', 5558],
    ]);
    const service = serviceFor(m, m.spec.engine!);
    expect(service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['http', 8000, 'http'],
      ['kv-events', 5557, 'kv-events'],
      ['kv-replay', 5558, 'kv-replay'],
    ]);
    // The EndpointSlice Kubernetes makes from that Service is what the catalogue reads.
    const slice: V1EndpointSlice = {
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.7'] }],
      ports: service.spec?.ports?.map((p) => ({ name: p.name, port: p.port })),
    };
    expect(kvEventAddresses([slice], 'llama-8b').get('http://10.0.0.7:8000')).toEqual({
      url: 'tcp://10.0.0.7:5557',
      replayUrl: 'tcp://10.0.0.7:5558',
      topic: 'kv@llama-8b',
    });
  });

  it('none for an embedding Model, another engine, or an admin’s own --kv-events-config', () => {
    for (const m of [
      model({ type: 'vllm' }, 'embedding'),
      model({ type: 'sglang' }),
      model({ type: 'vllm', args: ['--kv-events-config', '{"enable_kv_cache_events":false}'] }),
    ]) {
      const { container } = engineTemplate(m.spec, m.spec.engine!);
      expect((container.args ?? []).filter((a) => a === '--kv-events-config').length).toBeLessThanOrEqual(1);
      expect(container.ports?.map((p) => p.name)).toEqual(['http']);
      expect(serviceFor(m, m.spec.engine!).spec?.ports?.map((p) => p.name)).toEqual(['http']);
    }
  });

  it('a simulator chat Model: --kv-events-endpoint and --kv-events-replay-endpoint on the same ports', () => {
    const m = model({ type: 'simulator' });
    const { container } = engineTemplate(m.spec, m.spec.engine!);
    const args = container.args ?? [];
    expect(args[args.indexOf('--kv-events-endpoint') + 1]).toBe('tcp://*:5557');
    expect(args[args.indexOf('--kv-events-replay-endpoint') + 1]).toBe('tcp://*:5558');
    // The simulator's topic is kv@<the name in --models>: the served name, as the catalogue says.
    expect(args[args.indexOf('--models') + 1]).toBe('llama-8b');
    expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 9000],
      ['kv-events', 5557],
      ['kv-replay', 5558],
    ]);
    expect(serviceFor(m, m.spec.engine!).spec?.ports?.map((p) => p.name)).toEqual([
      'http',
      'kv-events',
      'kv-replay',
    ]);
  });

  it('none for a simulator embedding Model or an admin’s own --kv-events-endpoint', () => {
    for (const m of [
      model({ type: 'simulator' }, 'embedding'),
      model({ type: 'simulator', args: ['--kv-events-endpoint', 'tcp://*:6000'] }),
    ]) {
      const { container } = engineTemplate(m.spec, m.spec.engine!);
      expect((container.args ?? []).filter((a) => a === '--kv-events-endpoint').length).toBeLessThanOrEqual(
        1,
      );
      expect(container.args).not.toContain('tcp://*:5557');
      expect(container.ports?.map((p) => p.name)).toEqual(['http']);
      expect(serviceFor(m, m.spec.engine!).spec?.ports?.map((p) => p.name)).toEqual(['http']);
    }
  });
});
