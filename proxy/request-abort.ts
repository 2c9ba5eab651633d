// Why an engine call is cancelled: the client went away, or the key it was made with was rotated
// or deleted (KEY-5). One Cancel per request links both to the engine call; the key's lease calls
// it directly, and the class keeps per-request closures to two.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientClosedError } from '../http/client-closed.ts';
import type { KeyInvalidatedError, KeyLease } from './auth/key-cache.ts';
import { Cancel } from './engine/cancel.ts';
import { whenClosed } from './reply-closed.ts';

export interface RequestAbort {
  cancel: Cancel;
  /** Cancels the engine call for a reason of the proxy's own (e.g. a short concurrent reserve). */
  abort(reason: unknown): void;
  dispose(): void;
}

class LinkedAbort implements RequestAbort {
  readonly cancel = new Cancel();
  private readonly onClose: () => void;
  private readonly onKeyDead: (reason: KeyInvalidatedError) => void;

  constructor(
    private readonly reply: FastifyReply,
    private readonly lease: KeyLease,
  ) {
    this.onClose = () => {
      if (!reply.raw.writableFinished) this.cancel.abort(new ClientClosedError());
    };
    this.onKeyDead = (reason) => this.cancel.abort(reason);
    // The client may have gone already (during an await before the route got here): the engine
    // call would otherwise run for nobody.
    whenClosed(reply, this.onClose);
    if (lease.reason !== null) this.cancel.abort(lease.reason);
    else lease.onDead = this.onKeyDead;
  }

  abort(reason: unknown): void {
    this.cancel.abort(reason);
  }

  dispose(): void {
    this.reply.raw.removeListener('close', this.onClose);
    if (this.lease.onDead === this.onKeyDead) this.lease.onDead = null;
  }
}

export function linkRequestAbort(request: FastifyRequest, reply: FastifyReply): RequestAbort {
  return new LinkedAbort(reply, request.keyLease);
}
