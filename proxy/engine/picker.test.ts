import { describe, expect, it } from 'vitest';
import { EngineHealth } from './health.ts';
import { affinityKeyOf, EndpointPicker } from './picker.ts';

const urls = ['http://a', 'http://b', 'http://c'];

function setup(now = { t: 0 }) {
  const health = new EngineHealth({ cooldownMs: 1000, failuresToTrip: 2, now: () => now.t });
  return { health, picker: new EndpointPicker(health, { loadFactor: 1.25 }), now };
}

describe('EndpointPicker', () => {
  it('picks the endpoint with the fewest in-flight requests', () => {
    const { picker } = setup();
    picker.acquire('http://a');
    picker.acquire('http://a');
    picker.acquire('http://c');
    expect(picker.pick(urls)).toBe('http://b');
  });

  it('spreads requests evenly when they pile up', () => {
    const { picker } = setup();
    for (let i = 0; i < 30; i++) picker.acquire(picker.pick(urls)!);
    expect(urls.map((u) => picker.inFlight(u))).toEqual([10, 10, 10]);
  });

  it('release is idempotent', () => {
    const { picker } = setup();
    const release = picker.acquire('http://a');
    release();
    release();
    expect(picker.inFlight('http://a')).toBe(0);
  });

  it('skips excluded endpoints and returns null when none is left', () => {
    const { picker } = setup();
    expect(picker.pick(urls, { exclude: new Set(['http://a', 'http://b']) })).toBe('http://c');
    expect(picker.pick(urls, { exclude: new Set(urls) })).toBeNull();
  });

  it('skips an endpoint failing health until its cooldown passes, but never refuses outright', () => {
    const { picker, health, now } = setup();
    health.recordFailure('http://a');
    health.recordFailure('http://a');
    for (let i = 0; i < 10; i++) expect(picker.pick(urls)).not.toBe('http://a');
    expect(picker.pick(['http://a'])).toBe('http://a');
    now.t = 1001;
    expect(health.isHealthy('http://a')).toBe(true);
    health.recordFailure('http://a'); // half-open: one failure trips it again
    expect(health.isHealthy('http://a')).toBe(false);
    health.recordSuccess('http://a');
    expect(health.isHealthy('http://a')).toBe(true);
  });

  it('prefix affinity sends the same prompt to the same endpoint while load allows', () => {
    const { picker } = setup();
    const key = affinityKeyOf('You are a helpful assistant. Summarise:', 16)!;
    const first = picker.pick(urls, { affinityKey: key });
    for (let i = 0; i < 5; i++) expect(picker.pick(urls, { affinityKey: key })).toBe(first);
    // Different prompts spread over the endpoints.
    const seen = new Set(Array.from({ length: 60 }, (_, i) => picker.pick(urls, { affinityKey: `p${i}` })));
    expect(seen.size).toBe(3);
  });

  it('prefix affinity is bounded: a hot prompt overflows to other endpoints', () => {
    const { picker } = setup();
    const key = 'hot prompt';
    for (let i = 0; i < 30; i++) picker.acquire(picker.pick(urls, { affinityKey: key })!);
    const loads = urls.map((u) => picker.inFlight(u));
    expect(Math.max(...loads)).toBeLessThanOrEqual(Math.ceil((1.25 * 30) / 3));
    expect(loads.reduce((a, b) => a + b)).toBe(30);
  });

  it('affinity key is off with 0 characters', () => {
    expect(affinityKeyOf('abc', 0)).toBeUndefined();
    expect(affinityKeyOf('abcdef', 3)).toBe('abc');
  });
});
