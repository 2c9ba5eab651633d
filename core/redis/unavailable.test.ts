// Each way the Redis client says a server or a cluster shard cannot answer now, as the client
// builds it (ioredis's ReplyError for a server's reply, its own Errors otherwise): every one is
// "Redis unavailable" (a retryable 500 with Retry-After: http/errors.test.ts renders them), and
// nothing that is a wrong command or our own bug is.
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isRedisUnavailable } from './unavailable.ts';

const errno = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:6379`), { code });
const named = (name: string, message: string) => Object.assign(new Error(message), { name });

/** [what it is, the error as the client gives it]. */
const UNAVAILABLE: [string, Error][] = [
  ['a command timed out (a hung Redis)', new Error('Command timed out')],
  [
    'retries given up (a dead Redis)',
    named(
      'MaxRetriesPerRequestError',
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
    ),
  ],
  ['a closed connection', new Error('Connection is closed.')],
  ['a connection not writable', new Error("Stream isn't writeable and enableOfflineQueue options is false")],
  ['a refused connection', errno('ECONNREFUSED')],
  ['a reset connection', errno('ECONNRESET')],
  ['a broken pipe', errno('EPIPE')],
  ['CLUSTERDOWN: the shard has no primary', new ReplyError('CLUSTERDOWN The cluster is down')],
  ['CLUSTERDOWN: a slot unserved', new ReplyError('CLUSTERDOWN Hash slot not served')],
  ['TRYAGAIN: a slot migrating', new ReplyError('TRYAGAIN Multiple keys request during rehashing of slot')],
  [
    'MASTERDOWN: a replica lost its primary',
    new ReplyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
  ],
  ['LOADING: a node reading its AOF', new ReplyError('LOADING Redis is loading the dataset in memory')],
  ['READONLY: a demoted primary', new ReplyError("READONLY You can't write against a read only replica.")],
  [
    'a MOVED to a dead node, the redirections run out',
    new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 5798 127.0.0.1:7001'),
  ],
  ['a bare MOVED', new ReplyError('MOVED 5798 127.0.0.1:7001')],
  ['the cluster lost every node', named('ClusterAllFailedError', 'Failed to refresh slots cache.')],
  ['no startup node answers', new Error('None of startup nodes is available')],
  ['a cluster client disconnected', new Error('Cluster is disconnected.')],
  ['a cluster client not ready', new Error("Cluster isn't ready and enableOfflineQueue options is false")],
  ['a node of the cluster disconnected', new Error('Node is disconnected')],
  [
    'wrapped by a caller',
    new Error('reserving credits failed', { cause: new ReplyError('CLUSTERDOWN The cluster is down') }),
  ],
];

const NOT: [string, Error][] = [
  ['a wrong command', new ReplyError("ERR unknown command 'FOO'")],
  ['a wrong type', new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value')],
  [
    'keys in different slots (our bug)',
    new ReplyError("CROSSSLOT Keys in request don't hash to the same slot"),
  ],
  ['a script error', new ReplyError('ERR user_script:12: insufficient funds')],
  ['an ordinary bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
  ['a message merely mentioning a word', new Error('parsed MOVED from the reply')],
];

describe('isRedisUnavailable', () => {
  it.each(UNAVAILABLE)('ERR-3 %s is Redis unavailable', (_, err) => {
    expect(isRedisUnavailable(err)).toBe(true);
  });
  it.each(NOT)('%s is not', (_, err) => {
    expect(isRedisUnavailable(err)).toBe(false);
  });
});
