// The auto top-up checker: every console instance runs one, every CONSOLE_AUTO_TOPUP_CHECK_MS, over
// the accounts with auto top-up on. Each check reads the balance inside Redis (one script per
// account), so a check is cheap, and two instances checking at once still claim a crossing once
// (auto-topup-store.ts). Runs are chained, never overlapping, and stopped with the server.
import type { AutoTopUps } from './auto-topup.ts';
import type { PaymentLog } from './provider.ts';

export function startAutoTopUpChecker(
  auto: AutoTopUps,
  intervalMs: number,
  log: PaymentLog,
): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = auto
      .checkAll(log)
      .catch((err) => log.error({ err }, 'auto top-up: the checker run failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
