// Gauges of the faults a replica survives without crashing but cannot bill through (README "Money
// model", "Faults"): each is 0 while all is well and otherwise says for how long it has lasted, so
// one alert per gauge (`> 0` for a while) tells the operator which fault and since when.
import { Gauge, type Registry } from 'prom-client';

export interface FaultSources {
  /** How long the settlement journal has failed to write (a full disk), 0 while it writes. */
  journalFailingMs: () => number;
}

export function registerFaultMetrics(registry: Registry, sources: FaultSources): void {
  new Gauge({
    name: 'mp_proxy_journal_write_failing_seconds',
    help: 'How long the settlement journal has failed to write (a full PROXY_DATA_DIR); billable calls are refused meanwhile (0: it writes)',
    registers: [registry],
    collect() {
      this.set(sources.journalFailingMs() / 1000);
    },
  });
}
