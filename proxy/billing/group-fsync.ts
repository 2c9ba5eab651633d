// Group fsync for the settlement journal (./settlement-journal.ts): one fsync covers every line
// written before it, whoever asked. A caller arriving while an fsync runs, with lines written since
// it began, waits for the next one — which every such caller shares.
import { fsync } from 'node:fs';

export class GroupFsync {
  /** Lines were written since the last fsync began. */
  private dirty = false;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;

  /** `fd`: the file written now (it changes when the journal starts a new segment). */
  constructor(private readonly fd: () => number) {}

  /** Lines were written to the file. */
  wrote(): void {
    this.dirty = true;
  }

  /** A fresh file: nothing in it needs an fsync yet. */
  fresh(): void {
    this.dirty = false;
  }

  /** Resolves once every line written before the call is on disk. */
  sync(): Promise<void> {
    if (this.syncing === null) return this.dirty ? this.start() : Promise.resolve();
    if (!this.dirty) return this.syncing;
    this.nextSync ??= this.syncing.then(
      () => this.start(),
      () => this.start(),
    );
    return this.nextSync;
  }

  private start(): Promise<void> {
    this.nextSync = null;
    this.dirty = false;
    const fd = this.fd();
    const p = new Promise<void>((resolve, reject) => {
      fsync(fd, (err) => {
        if (this.syncing === p) this.syncing = null;
        if (err) reject(err);
        else resolve();
      });
    });
    this.syncing = p;
    return p;
  }
}
