// Gauges of the faults a replica survives without crashing but cannot bill through (docs/money.md
// "The money model", docs/faults.md "Faults"): each is 0 while all is well and otherwise says for
// how long it has lasted, so one alert per gauge (`> 0` for a while) tells the operator which fault
// and since when.
import { Gauge, type Registry } from 'prom-client';

export interface FaultSources {
  /** How long Redis has not answered the replica's PINGs (a hung or dead Redis), 0 while it does. */
  redisFailingMs: () => number;
  /** 1 while Redis is not the one this replica knew (its epoch is missing or another), else 0. */
  redisDataLost: () => number;
  /** How long the settlement journal has failed to write (a full disk), 0 while it writes. */
  journalFailingMs: () => number;
}

export function registerFaultMetrics(registry: Registry, sources: FaultSources): void {
  new Gauge({
    name: 'mp_proxy_redis_data_lost',
    help: 'Redis is not the one this replica knew (its mp:epoch is missing or another: it lost its data); nothing is served and owed settlements stay in the journal (1), or it is (0)',
    registers: [registry],
    collect() {
      this.set(sources.redisDataLost());
    },
  });
  new Gauge({
    name: 'mp_proxy_redis_unanswered_seconds',
    help: `How long Redis has not answered this replica's PINGs within REDIS_COMMAND_TIMEOUT_MS (hung or down); past PROXY_OUTBOX_STALL_MS billable calls are refused (0: it answers)`,
    registers: [registry],
    collect() {
      this.set(sources.redisFailingMs() / 1000);
    },
  });
  new Gauge({
    name: 'mp_proxy_journal_write_failing_seconds',
    help: 'How long the settlement journal has failed to write (a full PROXY_DATA_DIR); billable calls are refused meanwhile (0: it writes)',
    registers: [registry],
    collect() {
      this.set(sources.journalFailingMs() / 1000);
    },
  });
}
