// A process's CPU time from /proc (Linux): what the proxy benchmarks divide by requests served.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** utime + stime of a process, in microseconds. */
export function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}
