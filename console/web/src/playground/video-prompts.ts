// The prompt of each video job this browser created, by job id, one map per account: the API's video
// object does not carry its prompt, and "earlier videos" listed as bare ids told a person nothing
// (issue 37 item 5). The newest KEEP are kept in localStorage; never a key or its secret.

const KEEP = 200;
const storageKey = (accountId: string) => `modelplane.playground.videos.${accountId}`;

export function videoPrompts(storage: Storage, accountId: string): Record<string, string> {
  try {
    const kept = JSON.parse(storage.getItem(storageKey(accountId)) ?? '{}') as unknown;
    return kept && typeof kept === 'object' && !Array.isArray(kept) ? (kept as Record<string, string>) : {};
  } catch {
    return {};
  }
}

export function keepVideoPrompt(storage: Storage, accountId: string, id: string, prompt: string): void {
  // Insertion order is creation order: the oldest go first once KEEP are kept.
  const entries = [
    ...Object.entries(videoPrompts(storage, accountId)).filter(([k]) => k !== id),
    [id, prompt],
  ];
  try {
    storage.setItem(storageKey(accountId), JSON.stringify(Object.fromEntries(entries.slice(-KEEP))));
  } catch {
    // A full store loses the label, not the video.
  }
}
