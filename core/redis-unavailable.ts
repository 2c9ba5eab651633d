// Whether an error means Redis is out of reach rather than that a command was wrong: ioredis's
// command timeout (a hung Redis), its retries given up (a dead one), or a connection that is closed
// or not writable (no offline queue). Such a failure did nothing the caller must keep: it is
// answered as a retryable 500 with Retry-After, not as an internal error.
export function isRedisUnavailable(err: unknown): boolean {
  // Callers may wrap the client's error ({ cause }): the first few links are looked at.
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (outOfReach(e)) return true;
  return false;
}

function outOfReach(err: Error): boolean {
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return (
    err.message === 'Command timed out' ||
    err.message === 'Connection is closed.' ||
    err.message.startsWith("Stream isn't writeable") ||
    (err as NodeJS.ErrnoException).code === 'ECONNREFUSED'
  );
}
