// This replica's last known available balance per account, from its own reserve and settle
// results. It only decides whether a request may reserve concurrently with the engine call
// (DESIGN "Latency"); correctness never rests on it, because a concurrent reserve that comes back
// short still cancels the engine call before anything reaches the client.

const STALE_MS = 10_000;

export class BalanceView {
  private readonly known = new Map<string, { available: number; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  available(accountId: string): number | undefined {
    const k = this.known.get(accountId);
    if (!k) return undefined;
    if (this.now() - k.at > STALE_MS) {
      this.known.delete(accountId);
      return undefined;
    }
    return k.available;
  }

  set(accountId: string, available: number): void {
    this.known.set(accountId, { available, at: this.now() });
  }
}
