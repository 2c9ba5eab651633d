// Cancelling an engine call: why it stopped (the client left, the key died, a short reservation)
// reaches the undici request through hooks called synchronously. An AbortController per request
// with an EventTarget listener per engine call showed at about 3 % of the proxy's CPU; a request
// here has at most two or three hooks in its whole life.

export type CancelHook = (reason: unknown) => void;

export class Cancel {
  aborted = false;
  reason: unknown = undefined;
  private hooks: CancelHook[] | null = null;

  /** Fires every hook once, in order; later calls are ignored (the first reason wins). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const hooks = this.hooks;
    this.hooks = null;
    if (hooks !== null) for (const h of hooks) h(reason);
  }

  /** Calls `hook` on abort — at once if already aborted. */
  onAbort(hook: CancelHook): void {
    if (this.aborted) {
      hook(this.reason);
      return;
    }
    if (this.hooks === null) this.hooks = [hook];
    else this.hooks.push(hook);
  }

  off(hook: CancelHook): void {
    const hooks = this.hooks;
    if (hooks === null) return;
    const i = hooks.indexOf(hook);
    if (i !== -1) hooks.splice(i, 1);
  }

  /** A Cancel that aborts with this one, and may also abort on its own. */
  child(): Cancel {
    const c = new Cancel();
    this.onAbort((reason) => c.abort(reason));
    return c;
  }
}
