// Passive health of engine endpoints, as seen by this replica: an endpoint that fails
// `failuresToTrip` times in a row is skipped for a cooldown, then given one trial request
// (half-open). Any success closes it again. No probes: real traffic is the probe.

export interface EngineHealthOptions {
  cooldownMs: number;
  failuresToTrip?: number;
  now?: () => number;
}

interface EndpointState {
  consecutiveFailures: number;
  /** While now < downUntil the endpoint is skipped. */
  downUntil: number;
}

export class EngineHealth {
  private readonly states = new Map<string, EndpointState>();
  private readonly failuresToTrip: number;
  private readonly now: () => number;

  constructor(private readonly options: EngineHealthOptions) {
    this.failuresToTrip = options.failuresToTrip ?? 3;
    this.now = options.now ?? Date.now;
  }

  isHealthy(url: string): boolean {
    const s = this.states.get(url);
    return s === undefined || s.downUntil <= this.now();
  }

  recordSuccess(url: string): void {
    // Deleting keeps the map as small as the set of currently troubled endpoints.
    this.states.delete(url);
  }

  recordFailure(url: string): void {
    const s = this.states.get(url) ?? { consecutiveFailures: 0, downUntil: 0 };
    s.consecutiveFailures++;
    if (s.consecutiveFailures >= this.failuresToTrip) {
      // Half-open after the cooldown: one more failure trips it again at once.
      s.downUntil = this.now() + this.options.cooldownMs;
      s.consecutiveFailures = this.failuresToTrip - 1;
    }
    this.states.set(url, s);
  }

  /** Endpoints currently skipped, for /readyz-style diagnostics and metrics. */
  down(): string[] {
    const now = this.now();
    return [...this.states].filter(([, s]) => s.downUntil > now).map(([url]) => url);
  }
}
