// A gauge per fault of the table (./faults.ts), read at scrape time (docs/money.md "The money
// model", docs/faults.md "Faults"): each is 0 while all is well and otherwise says for how long the fault has lasted (or
// 1 while it lasts), so one alert per gauge (`> 0` for a while) tells the operator which fault and
// since when. The names are what the chart's alerts and dashboard read.
import { Gauge, type Registry } from 'prom-client';
import type { FaultBoard } from './board.ts';

export function registerFaultMetrics(registry: Registry, board: FaultBoard): void {
  for (const { metric } of board.table)
    new Gauge({
      name: metric.name,
      help: metric.help,
      registers: [registry],
      collect() {
        this.set(metric.value(board.sources));
      },
    });
}
