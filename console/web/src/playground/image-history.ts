// The Playground's earlier images, kept in this browser across reloads, one history per account
// (issue 37 item 5). The API keeps no image (a `url` answer expires; the Playground asks for
// b64_json), so this browser is the only place an earlier result still exists. IndexedDB, not
// localStorage: one 1024×1024 PNG is a megabyte or more of base64, past localStorage's few-MB
// quota after a handful. The newest KEEP of an account are kept; older ones are dropped on write.
// Never a key or its secret: only what the page drew.

export const KEEP = 24;
const DB = 'modelplane.playground';
const STORE = 'images';

export interface KeptImage {
  /** Unique in this browser: `<accountId>:<createdAt>:<index>`. */
  id: string;
  accountId: string;
  createdAt: number;
  model: string;
  prompt: string;
  size: string;
  /** The options sent with the call, as sent (empty when left to the model). */
  options: Record<string, string>;
  /** A data: URL of the PNG, as the API returned it. */
  src: string;
}

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore(STORE, { keyPath: 'id' }).createIndex('account', 'accountId');
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  });
}

/** The account's kept images, newest first. */
export async function listImages(accountId: string): Promise<KeptImage[]> {
  const db = await open();
  try {
    return newestFirst(await listImagesIn(db, accountId));
  } finally {
    db.close();
  }
}

export const newestFirst = (images: KeptImage[]) =>
  [...images].sort((a, b) => b.createdAt - a.createdAt || b.id.localeCompare(a.id));

/** Which of an account's images to drop so the newest KEEP remain. */
export const beyondKeep = (images: KeptImage[], keep = KEEP) => newestFirst(images).slice(keep);

/** Adds a call's images and drops the account's oldest beyond KEEP; returns the history after. */
export async function keepImages(accountId: string, added: KeptImage[]): Promise<KeptImage[]> {
  const db = await open();
  try {
    let tx = db.transaction(STORE, 'readwrite');
    for (const image of added) tx.objectStore(STORE).put(image);
    await done(tx);
    const all = await listImagesIn(db, accountId);
    tx = db.transaction(STORE, 'readwrite');
    for (const old of beyondKeep(all)) tx.objectStore(STORE).delete(old.id);
    await done(tx);
    return newestFirst(all).slice(0, KEEP);
  } finally {
    db.close();
  }
}

/** Removes one image from the history (the person's choice). */
export async function forgetImage(id: string): Promise<void> {
  const db = await open();
  try {
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).delete(id);
    await done(tx);
  } finally {
    db.close();
  }
}

function listImagesIn(db: IDBDatabase, accountId: string): Promise<KeptImage[]> {
  return new Promise((resolve, reject) => {
    const req = db.transaction(STORE).objectStore(STORE).index('account').getAll(accountId);
    req.onsuccess = () => resolve(req.result as KeptImage[]);
    req.onerror = () => reject(req.error);
  });
}
