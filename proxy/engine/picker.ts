// Which engine endpoint serves a request. Default: the fewest in-flight requests from this replica
// (ties rotate). With an affinity key (a hash of the prompt's leading characters) the endpoints
// are ranked by rendezvous hashing and the first one under a load bound wins — "consistent hashing
// with bounded loads": repeated prompts land on the same engine and hit its prefix cache, yet no
// endpoint takes more than `loadFactor` times the mean load. Endpoints failing health are skipped
// unless all of them are failing (then trying beats refusing).
import type { EngineHealth } from './health.ts';

export interface PickOptions {
  affinityKey?: string;
  /** Endpoints already tried for this request. */
  exclude?: ReadonlySet<string>;
  /** Prefix-cache routing's score (kv-index/prefix-routing.ts), lowest wins; overrides affinity. */
  score?: (url: string, inFlight: number) => number;
}

export class EndpointPicker {
  private readonly load = new Map<string, number>();
  private readonly urlHashes = new Map<string, number>();
  private rotation = 0;

  constructor(
    private readonly health: EngineHealth,
    private readonly options: { loadFactor: number },
  ) {}

  inFlight(url: string): number {
    return this.load.get(url) ?? 0;
  }

  /** Counts a request against `url`; the returned release is safe to call more than once. */
  acquire(url: string): () => void {
    this.load.set(url, this.inFlight(url) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.inFlight(url) - 1;
      if (n <= 0) this.load.delete(url);
      else this.load.set(url, n);
    };
  }

  pick(urls: readonly string[], opts: PickOptions = {}): string | null {
    const candidates = opts.exclude ? urls.filter((u) => !opts.exclude!.has(u)) : urls;
    if (candidates.length === 0) return null;
    const healthy = candidates.filter((u) => this.health.isHealthy(u));
    const pool = healthy.length > 0 ? healthy : candidates;
    if (pool.length === 1) return pool[0]!;
    if (opts.score) return this.lowestScore(pool, opts.score);
    return opts.affinityKey === undefined ? this.leastLoaded(pool) : this.byAffinity(pool, opts.affinityKey);
  }

  private leastLoaded(pool: readonly string[]): string {
    const start = this.rotation++ % pool.length;
    let best = pool[start]!;
    let bestLoad = this.inFlight(best);
    for (let i = 1; i < pool.length && bestLoad > 0; i++) {
      const url = pool[(start + i) % pool.length]!;
      const load = this.inFlight(url);
      if (load < bestLoad) {
        best = url;
        bestLoad = load;
      }
    }
    return best;
  }

  /** Ties rotate, as in leastLoaded, so equal endpoints share the calls. */
  private lowestScore(pool: readonly string[], score: NonNullable<PickOptions['score']>): string {
    const start = this.rotation++ % pool.length;
    let best = pool[start]!;
    let bestScore = score(best, this.inFlight(best));
    for (let i = 1; i < pool.length; i++) {
      const url = pool[(start + i) % pool.length]!;
      const s = score(url, this.inFlight(url));
      if (s < bestScore) [best, bestScore] = [url, s];
    }
    return best;
  }

  private byAffinity(pool: readonly string[], key: string): string {
    let total = 0;
    for (const url of pool) total += this.inFlight(url);
    // After placing this request the mean is (total + 1) / n; the least-loaded endpoint is always
    // at or under it, so some endpoint always fits the bound.
    const bound = Math.ceil((this.options.loadFactor * (total + 1)) / pool.length);
    const keyHash = fnv1a(key);
    const ranked = pool
      .map((url) => ({ url, score: mix(keyHash ^ this.urlHash(url)) }))
      .sort((a, b) => b.score - a.score);
    for (const { url } of ranked) if (this.inFlight(url) + 1 <= bound) return url;
    return this.leastLoaded(pool);
  }

  private urlHash(url: string): number {
    let h = this.urlHashes.get(url);
    if (h === undefined) {
      h = fnv1a(url);
      this.urlHashes.set(url, h);
    }
    return h;
  }
}

/** The affinity key of a prompt: its first `chars` characters, or undefined when affinity is off. */
export function affinityKeyOf(prompt: string, chars: number): string | undefined {
  return chars > 0 && prompt.length > 0 ? prompt.slice(0, chars) : undefined;
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A finalizer (murmur3 fmix32) so scores of similar inputs spread evenly. */
function mix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}
