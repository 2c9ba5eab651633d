// The object store the configuration asks for (docs/operations.md "Media storage": MEDIA_STORE and friends).
import type { MediaConfig as Config } from '../config/index.ts';
import { FsStore } from './fs-store.ts';
import { S3Store } from './s3-store.ts';
import type { ObjectStore } from './store.ts';
import type { UrlSigner } from './url-signer.ts';

export type { ObjectStore } from './store.ts';

/** The configured store; an S3 one is checked (bucket reachable, keys accepted) before it is used. */
export async function createObjectStore(
  config: Config,
  signer: UrlSigner,
): Promise<ObjectStore & { close?(): void }> {
  if (config.MEDIA_STORE === 'fs') return new FsStore(config.MEDIA_DIR, signer);
  const store = new S3Store({
    bucket: config.S3_BUCKET!,
    region: config.S3_REGION,
    endpoint: config.S3_ENDPOINT,
    forcePathStyle: config.S3_FORCE_PATH_STYLE ?? config.S3_ENDPOINT !== undefined,
    credentials:
      config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY }
        : undefined,
    prefix: config.S3_PREFIX,
  });
  await store.check();
  return store;
}
