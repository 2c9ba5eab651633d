// Which media URLs a request may hand an engine (issue 24 item 4; docs/security.md "Media URLs"),
// applied to every text request at the policy door (calls/text-door.ts).
// The proxy fetches nothing itself, but vLLM downloads http(s) image, audio and video URLs from
// inside the cluster, so a URL naming an internal address would make a GPU pod call it for any
// key. Refused with a 400 naming the field: a scheme other than https or data:, and a host that is
// a literal loopback, private, link-local, carrier-grade NAT, unspecified or metadata address, or a
// name that only means something inside a network (localhost, a name without a dot, *.internal,
// *.local, *.localhost, *.svc, *.cluster.local). A public name that resolves to an internal address
// is not caught here (the proxy does not resolve names): the engine's own media-domain list
// (--allowed-media-domains, set by the operator) and the engines' egress NetworkPolicy cover that.
import { BlockList, isIPv4, isIPv6 } from 'node:net';

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
