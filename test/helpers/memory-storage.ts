// localStorage's interface over a Map, for the console web app's unit tests; `limit` (characters
// of one value) makes setItem throw as a full browser store does.
export function memoryStorage(limit = Number.POSITIVE_INFINITY): Storage {
  const m = new Map<string, string>();
  return {
    get length() {
      return m.size;
    },
    clear: () => m.clear(),
    getItem: (k) => m.get(k) ?? null,
    key: (i) => [...m.keys()][i] ?? null,
    removeItem: (k) => void m.delete(k),
    setItem: (k, v) => {
      if (v.length > limit) throw new DOMException('quota', 'QuotaExceededError');
      m.set(k, v);
    },
  };
}
