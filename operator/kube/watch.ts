// A watch that cannot hang forever. client-node's Watch sets no timeout at all (its 30 s signal is
// built and then overwritten), so a watch on a connection that went silent — no FIN, no RST —
// waits forever and its informer's cache silently stops changing. Three bounds, as client-go has:
// - the response headers must arrive within the request timeout (node-fetch's `timeout` covers
//   exactly that span);
// - the API server ends every watch after `timeoutSeconds` (randomized between the minimum and
//   twice it, so replicas' watches do not all restart together), and sends bookmarks meanwhile;
//   ListWatch then resumes from its resourceVersion without an error;
// - nothing at all for that long plus a grace period means the connection is dead: the watch is
//   aborted, reported as an error, and the informer restarts it with backoff.
import { type KubeConfig, Watch } from '@kubernetes/client-node';

export interface WatchBounds {
  headersTimeoutMs: number;
  minTimeoutSeconds: number;
  idleGraceMs: number;
  random?: () => number;
}

type WatchArgs = Parameters<Watch['watch']>;

/** The same KubeConfig (read through the prototype), its fetch options given a headers timeout. */
function withHeadersTimeout(kc: KubeConfig, ms: number): KubeConfig {
  const bounded = Object.create(kc) as KubeConfig;
  bounded.applyToFetchOptions = async (opts) => ({ ...(await kc.applyToFetchOptions(opts)), timeout: ms });
  return bounded;
}

export class BoundedWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly bounds: WatchBounds,
  ) {
    super(withHeadersTimeout(kc, bounds.headersTimeoutMs));
  }

  override async watch(
    path: WatchArgs[0],
    queryParams: WatchArgs[1],
    callback: WatchArgs[2],
    done: WatchArgs[3],
  ): Promise<AbortController> {
    const { minTimeoutSeconds, idleGraceMs, random = Math.random } = this.bounds;
    const timeoutSeconds = Math.round(minTimeoutSeconds * (1 + random()));
    let controller: AbortController | undefined;
    let idle: NodeJS.Timeout | undefined;
    let finished = false;
    const arm = () => {
      if (idle) clearTimeout(idle);
      if (finished) return;
      idle = setTimeout(() => controller?.abort(), timeoutSeconds * 1000 + idleGraceMs);
      idle.unref();
    };
    controller = await super.watch(
      path,
      { ...queryParams, timeoutSeconds, allowWatchBookmarks: true },
      (phase, obj, watchObj) => {
        arm();
        callback(phase, obj, watchObj);
      },
      (err) => {
        finished = true;
        if (idle) clearTimeout(idle);
        done(err);
      },
    );
    arm();
    return controller;
  }
}
