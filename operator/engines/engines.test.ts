import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import type { EngineSpec } from '../model/model.ts';
import { engineTemplate } from './index.ts';

const spec = (engine: EngineSpec, over = {}) => ({ ...chatModel().spec, engine, ...over });

describe('engine pod templates', () => {
  it('vLLM: served name, usage details, /health probes, GPU limits', () => {
    const s = spec({ type: 'vllm', model: 'meta-llama/Llama-3.1-8B-Instruct', gpus: 2 });
    const { container, volumes } = engineTemplate(s, s.engine);
    expect(container.args).toEqual(
      expect.arrayContaining([
        '--served-model-name',
        'Meta-Llama/Llama-3.1-8B-Instruct',
        '--enable-prompt-tokens-details',
      ]),
    );
    expect(container.args).toEqual(
      expect.arrayContaining(['--enable-force-include-usage', '--tensor-parallel-size', '2']),
    );
    expect(container.args).toEqual(
      expect.arrayContaining(['--max-model-len', '131072', '--enable-auto-tool-choice']),
    );
    expect(container.readinessProbe?.httpGet?.path).toBe('/health');
    expect(container.startupProbe?.httpGet?.path).toBe('/health');
    expect(container.resources?.limits?.['nvidia.com/gpu']).toBe('2');
    expect(volumes?.[0]?.emptyDir?.medium).toBe('Memory');
  });

  it('vLLM: the default image is past the chat-template advisories; media only from the Model’s hosts, never by redirect', () => {
    const plain = spec({ type: 'vllm' });
    const c = engineTemplate(plain, plain.engine).container;
    // Past GHSA-6fvq-23cw-5628 (0.11.0), GHSA-69j4-grxj-j64p (0.11.1) and GHSA-4hw3-g54f-xfrj; v0.11.0 was the default.
    expect(c.image).toBe('vllm/vllm-openai:v0.32.0');
    expect(c.args).not.toContain('--allowed-media-domains');
    expect(c.env).toContainEqual({ name: 'VLLM_MEDIA_URL_ALLOW_REDIRECTS', value: '0' });
    const limited = spec({ type: 'vllm', allowedMediaDomains: ['images.example.com', 'cdn.example.org'] });
    const args = engineTemplate(limited, limited.engine).container.args ?? [];
    const at = args.indexOf('--allowed-media-domains');
    expect(args.slice(at, at + 3)).toEqual([
      '--allowed-media-domains',
      'images.example.com',
      'cdn.example.org',
    ]);
  });

  it('vLLM: flags the admin set in args are not doubled', () => {
    const s = spec({ type: 'vllm', args: ['--max-model-len=8192', '--tool-call-parser', 'llama3_json'] });
    const args = engineTemplate(s, s.engine).container.args ?? [];
    expect(args.filter((a) => a.startsWith('--max-model-len'))).toEqual(['--max-model-len=8192']);
    expect(args.filter((a) => a === '--tool-call-parser')).toHaveLength(1);
  });

  it('vLLM: a base of adapter Models (engine.lora) loads LoRAs at runtime; without it, no LoRA flags', () => {
    const plain = spec({ type: 'vllm' });
    const c = engineTemplate(plain, plain.engine).container;
    expect(c.args).not.toContain('--enable-lora');
    expect(c.env?.map((e) => e.name)).not.toContain('VLLM_ALLOW_RUNTIME_LORA_UPDATING');
    const base = spec({ type: 'vllm', lora: { maxLoras: 4, maxLoraRank: 16 } });
    const b = engineTemplate(base, base.engine).container;
    const at = b.args?.indexOf('--enable-lora') ?? -1;
    expect(b.args?.slice(at, at + 5)).toEqual(['--enable-lora', '--max-loras', '4', '--max-lora-rank', '16']);
    expect(b.env).toContainEqual({ name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' });
  });

  it.each([
    ['sglang', '--served-model-name', '/health'],
    ['tei', '--served-model-name', '/health'],
    ['llamacpp', '--alias', '/health'],
  ] as const)('%s names the served model and probes %s', (type, flag, path) => {
    const s = spec({ type });
    const c = engineTemplate(s, s.engine).container;
    expect(c.args).toEqual(expect.arrayContaining([flag, 'Meta-Llama/Llama-3.1-8B-Instruct']));
    expect(c.readinessProbe?.httpGet?.path).toBe(path);
  });

  it("simulator runs its image's entrypoint on the declared port without a GPU", () => {
    const s = spec({ type: 'simulator', port: 9100 });
    const c = engineTemplate(s, s.engine).container;
    expect(c.command).toBeUndefined();
    expect(c.args).toEqual(expect.arrayContaining(['--port', '9100']));
    expect(c.resources?.limits).toBeUndefined();
  });

  it('custom uses the given image, command and args as they are', () => {
    const s = spec({
      type: 'custom',
      image: 'ghcr.io/acme/server:1',
      command: ['serve'],
      args: ['--x'],
      port: 7000,
    });
    const c = engineTemplate(s, s.engine).container;
    expect(c).toMatchObject({ image: 'ghcr.io/acme/server:1', command: ['serve'], args: ['--x'] });
    expect(c.ports).toEqual([{ name: 'http', containerPort: 7000, protocol: 'TCP' }]);
  });

  it('vLLM and SGLang (./gpu-server.ts): the whole container, in order — weights, name, address, own flags, context, tensor parallelism, then the admin’s args', () => {
    const vllm = spec({ type: 'vllm', model: 'org/weights', gpus: 2, args: ['--seed', '1'] });
    const v = engineTemplate(vllm, vllm.engine);
    expect(v.container.args).toEqual([
      '--model',
      'org/weights',
      '--served-model-name',
      'Meta-Llama/Llama-3.1-8B-Instruct',
      '--host',
      '0.0.0.0',
      '--port',
      '8000',
      '--enable-prompt-tokens-details',
      '--enable-force-include-usage',
      '--max-model-len',
      '131072',
      '--tensor-parallel-size',
      '2',
      '--enable-auto-tool-choice',
      '--tool-call-parser',
      'hermes',
      // ./kv-events-flags.ts: the proxies' prefix index follows these.
      '--kv-events-config',
      JSON.stringify({
        enable_kv_cache_events: true,
        publisher: 'zmq',
        endpoint: 'tcp://*:5557',
        replay_endpoint: 'tcp://*:5558',
        topic: 'kv@Meta-Llama/Llama-3.1-8B-Instruct',
      }),
      '--seed',
      '1',
      // operator/fleet/drain.ts: in-flight streams finish on SIGTERM (vLLM's default 0 aborts them).
      '--shutdown-timeout',
      '40',
    ]);
    const sglang = spec({ type: 'sglang', model: 'org/weights', gpus: 2, args: ['--seed', '1'] });
    const g = engineTemplate(sglang, sglang.engine);
    expect(g.container).toMatchObject({
      image: 'lmsysorg/sglang:v0.5.3-cu126',
      command: ['python3', '-m', 'sglang.launch_server'],
      volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }],
    });
    expect(g.container.args).toEqual([
      '--model-path',
      'org/weights',
      '--served-model-name',
      'Meta-Llama/Llama-3.1-8B-Instruct',
      '--host',
      '0.0.0.0',
      '--port',
      '30000',
      '--enable-cache-report',
      '--context-length',
      '131072',
      '--tp',
      '2',
      '--seed',
      '1',
    ]);
    expect(g.container.startupProbe?.httpGet?.path).toBe('/health');
    expect(g.volumes).toEqual(v.volumes);
    expect(Object.keys(g.container)).toEqual([
      'name',
      'env',
      'ports',
      'resources',
      'image',
      'command',
      'args',
      'startupProbe',
      'readinessProbe',
      'livenessProbe',
      'volumeMounts',
    ]);
  });
});
