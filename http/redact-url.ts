// Request URLs as logs may show them, for every server here (proxy and console): query values can
// hold credentials (signed media links' signatures, keys pasted as ?api_key=), and so can a path.
/** Anything shaped like an API key (`sk-<brand>-<hex>`, older formats too) pasted into a path. */
const KEY_LIKE = /sk-[A-Za-z0-9_-]{8,}/g;

/**
 * A URL with every query value replaced (`?api_key=sk-…&x=1` → `?api_key=[redacted]&x=[redacted]`)
 * and key-shaped path segments masked.
 */
export function redactQuery(raw: string): string {
  const url = raw.includes('sk-') ? raw.replace(KEY_LIKE, 'sk-[redacted]') : raw;
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((p) => {
      const eq = p.indexOf('=');
      return eq === -1 ? p : `${p.slice(0, eq)}=[redacted]`;
    });
  return `${url.slice(0, q)}?${params.join('&')}`;
}
