// Which media URLs a request may hand an engine (issue 24 item 4; docs/security.md "Media URLs").
// The proxy fetches nothing itself, but vLLM downloads http(s) image, audio and video URLs from
// inside the cluster, so a URL naming an internal address would make a GPU pod call it for any
// key. Refused with a 400 naming the field: a scheme other than https or data:, and a host that is
// a literal loopback, private, link-local, carrier-grade NAT, unspecified or metadata address, or a
// name that only means something inside a network (localhost, a name without a dot, *.internal,
// *.local, *.localhost, *.svc, *.cluster.local). A public name that resolves to an internal address
// is not caught here (the proxy does not resolve names): the engine's own media-domain list
// (--allowed-media-domains, set by the operator) and the engines' egress NetworkPolicy cover that.
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { CatalogueEntry } from '../core/catalogue/index.ts';
import { ApiError } from '../core/errors.ts';

const internal = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, where cloud metadata lives (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments (some clouds' metadata, e.g. 192.0.0.192)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255
] as const)
  internal.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local (AWS's IPv6 metadata is fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  internal.addSubnet(net, bits, 'ipv6');

const INTERNAL_NAMES = /(^|\.)(localhost|internal|local|svc|cluster\.local|home\.arpa)$/;

/** An IPv6 literal that carries an IPv4 address (::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::a.b.c.d). */
function embeddedIPv4(v6: string): string | null {
  const m = /^(?:::ffff:|::|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(v6);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2]!, 16);
  const lo = Number.parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why this URL may not reach an engine, or null when it may. */
export function mediaUrlProblem(raw: string): string | null {
  if (/^data:/i.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL: send an https:// URL or a data: URL';
  }
  if (url.protocol !== 'https:')
    return `must be an https:// or data: URL (${url.protocol.replace(/:$/, '')} is not accepted)`;
  // The WHATWG parser has already turned 2130706433, 0x7f.1 and 127.1 into 127.0.0.1.
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const denied = 'names an internal address; media must come from a public host';
  if (isIPv4(host)) return internal.check(host, 'ipv4') ? denied : null;
  if (isIPv6(host)) {
    const v4 = embeddedIPv4(host);
    if (v4 !== null) return internal.check(v4, 'ipv4') ? denied : null;
    return internal.check(host, 'ipv6') ? denied : null;
  }
  if (!host.includes('.') || INTERNAL_NAMES.test(host)) return denied;
  return null;
}

const check = (raw: unknown, param: string) => {
  if (typeof raw !== 'string') return;
  const problem = mediaUrlProblem(raw);
  if (problem !== null) throw new ApiError('invalid_request', `${param} ${problem}.`, { param });
};

const URL_PARTS = ['image_url', 'audio_url', 'video_url'] as const;

/**
 * A chat-completions request's messages: every media URL checked, and image parts refused for a
 * model without `vision`. (The Messages dialect checks its image blocks while converting them,
 * dialects/messages/request.ts, so its errors name its own fields.)
 */
export function checkChatMedia(messages: readonly { content?: unknown }[], entry: CatalogueEntry): void {
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((part: unknown, j: number) => {
      if (typeof part !== 'object' || part === null) return;
      const p = part as Record<string, unknown>;
      const at = `messages[${i}].content[${j}]`;
      if (p.type === 'image_url' && !entry.capabilities.vision)
        throw new ApiError('invalid_request', `${entry.id} cannot read images; choose a vision model.`, {
          param: at,
        });
      for (const kind of URL_PARTS) {
        if (p.type !== kind) continue;
        const inner = p[kind];
        // image_url may also be a bare string in some clients; both forms are checked.
        if (typeof inner === 'string') check(inner, `${at}.${kind}`);
        else if (typeof inner === 'object' && inner !== null)
          check((inner as { url?: unknown }).url, `${at}.${kind}.url`);
      }
    });
  });
}
