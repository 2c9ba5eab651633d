// Whether an error means Redis is out of reach rather than that a command was wrong: ioredis's
// command timeout (a hung Redis), its retries given up (a dead one), a connection that is closed
// or not writable (no offline queue) — and on a Redis Cluster, the answers a shard gives while its
// primary is failing over (issue 38): `CLUSTERDOWN`, `TRYAGAIN`, `MASTERDOWN`, a `MOVED`/`ASK` to a
// dead node once the client's redirections run out, a demoted primary's `READONLY`, a node still
// `LOADING` its AOF, the cluster client with no node to send to. Such a failure did nothing the
// caller must keep: it is answered as a retryable 500 with Retry-After, and logged as Redis being
// unavailable, not as an internal error.
export function isRedisUnavailable(err: unknown): boolean {
  // Callers may wrap the client's error ({ cause }): the first few links are looked at.
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (outOfReach(e)) return true;
  return false;
}

/** Error names of the client's own that say no server could be reached. */
const NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);

/** Whole messages of the client's that say the same. */
const MESSAGES = new Set([
  'Command timed out',
  'Connection is closed.',
  'Connection is aborted',
  'None of startup nodes is available',
  'Cluster is disconnected.',
  "Cluster isn't ready and enableOfflineQueue options is false",
  'Node is disconnected',
]);

/**
 * The first word of a server reply (or of the client's message) that says a shard cannot answer
 * now. ioredis's "Too many Cluster redirections. Last error: MOVED …" is the MOVED the client gave
 * up following: the slot's owner is dead and the cluster has not promoted its replica yet.
 */
const PREFIXES = [
  'CLUSTERDOWN',
  'TRYAGAIN',
  'MASTERDOWN',
  'LOADING',
  'READONLY',
  'MOVED ',
  'ASK ',
  'Too many Cluster redirections',
  "Stream isn't writeable",
];

/** Socket failures: the server went away under the command. */
const CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

function outOfReach(err: Error): boolean {
  if (NAMES.has(err.name) || MESSAGES.has(err.message)) return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && CODES.has(code)) return true;
  return PREFIXES.some((p) => err.message.startsWith(p));
}
