// The engines' egress NetworkPolicy (issue 40 item 4), rendered by a real helm and read the way a
// network plugin reads it: every Model's engine pod (the labels the operator gives it) is selected,
// and it may reach DNS, the configured model store, HTTPS on public addresses and the extra rules —
// never a private, loopback, link-local (cloud metadata) or other internal address, which the proxy
// already refuses in media URLs (proxy/media-urls.ts) but a public name resolving inward would
// otherwise reach.
import { BlockList, isIPv6 } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatModel } from '../../operator/fixtures.ts';
import { deploymentFor } from '../../operator/reconcile/objects.ts';
import { mediaUrlProblem } from '../../proxy/media-urls.ts';
import { chartDir, helm, type K8sObject, render, renderDefaultsAndAllOn } from './helm.ts';

let defaults: K8sObject[];
let allOn: K8sObject[];
beforeAll(async () => {
  [defaults, allOn] = await renderDefaultsAndAllOn();
}, 900_000);

const egressPolicies = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'NetworkPolicy' && o.spec.policyTypes.includes('Egress'));

interface Peer {
  ipBlock?: { cidr: string; except?: string[] };
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}
interface Rule {
  to?: Peer[];
  ports?: { port: number | string; protocol?: string }[];
}
/** Where a connection goes: an address, or a pod (its labels and its namespace's). */
type Destination = { port: number; protocol?: 'TCP' | 'UDP' } & (
  | { ip: string }
  | { pod: Record<string, string>; namespace: Record<string, string> }
);

const subset = (want: Record<string, string> | undefined, have: Record<string, string>) =>
  Object.entries(want ?? {}).every(([k, v]) => have[k] === v);

function inBlock(ip: string, block: { cidr: string; except?: string[] }): boolean {
  const family = isIPv6(ip) ? 'ipv6' : 'ipv4';
  const list = (cidrs: string[]) => {
    const l = new BlockList();
    for (const c of cidrs) {
      const [net, bits] = c.split('/');
      if (isIPv6(net!) === (family === 'ipv6')) l.addSubnet(net!, Number(bits), family);
    }
    return l;
  };
  return list([block.cidr]).check(ip, family) && !list(block.except ?? []).check(ip, family);
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) travels as IPv4: the address it carries. */
function onTheWire(ip: string): string {
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!m) return ip;
  const [hi, lo] = [Number.parseInt(m[1]!, 16), Number.parseInt(m[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function peerAdmits(peer: Peer, to: Destination): boolean {
  if ('ip' in to) return peer.ipBlock !== undefined && inBlock(onTheWire(to.ip), peer.ipBlock);
  if (peer.ipBlock) return false;
  // A peer with only a podSelector means this policy's namespace; the tests never rely on that.
  return (
    subset(peer.namespaceSelector?.matchLabels, to.namespace) && subset(peer.podSelector?.matchLabels, to.pod)
  );
}

/** Whether the policy's egress rules let a selected pod open this connection (NetworkPolicy semantics). */
function allows(policy: K8sObject, to: Destination): boolean {
  return (policy.spec.egress as Rule[]).some(
    (rule) =>
      (rule.to === undefined || rule.to.some((p) => peerAdmits(p, to))) &&
      (rule.ports === undefined ||
        rule.ports.some((p) => p.port === to.port && (p.protocol ?? 'TCP') === (to.protocol ?? 'TCP'))),
  );
}

const kubeDns = {
  pod: { 'k8s-app': 'kube-dns' },
  namespace: { 'kubernetes.io/metadata.name': 'kube-system' },
};
// One address of every range proxy/media-urls.ts refuses, and public ones.
const INTERNAL = [
  '0.0.0.1',
  '10.96.0.1',
  '100.64.0.1',
  '127.0.0.1',
  '169.254.169.254',
  '172.16.0.1',
  '192.0.0.192',
  '192.168.1.1',
  '198.18.0.1',
  '224.0.0.1',
  '255.255.255.255',
  '::1',
  'fd00:ec2::254',
  'fe80::1',
  'ff02::1',
  '::ffff:a9fe:a9fe',
];
const PUBLIC = ['8.8.8.8', '52.84.0.1', '2606:4700::1111'];

describe('engine egress', () => {
  it('one egress policy per engine namespace, selecting the pods the operator runs for every Model', () => {
    expect(egressPolicies(allOn).map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual([
      'modelplane/mp-modelplane-engines-egress',
      'models/mp-modelplane-engines-egress',
    ]);
    const podLabels = deploymentFor(chatModel(), { type: 'simulator' }).spec?.template.metadata?.labels ?? {};
    for (const p of egressPolicies(allOn)) {
      expect(p.spec.policyTypes).toEqual(['Egress']);
      expect(subset(p.spec.podSelector.matchLabels, podLabels), JSON.stringify(podLabels)).toBe(true);
    }
  });

  it('allows DNS and HTTPS to public addresses, and nothing else', () => {
    const [policy] = egressPolicies(defaults);
    expect(policy).toBeDefined();
    expect(allows(policy!, { ...kubeDns, port: 53, protocol: 'UDP' })).toBe(true);
    expect(allows(policy!, { ...kubeDns, port: 53, protocol: 'TCP' })).toBe(true);
    for (const ip of PUBLIC) {
      expect(allows(policy!, { ip, port: 443 }), ip).toBe(true);
      for (const port of [80, 22, 6379, 53])
        expect(allows(policy!, { ip, port }), `${ip}:${port}`).toBe(false);
    }
    // A pod in the cluster (Redis, the proxy, another engine) by its labels, on any port.
    const redis = {
      pod: { 'app.kubernetes.io/component': 'redis' },
      namespace: { 'kubernetes.io/metadata.name': 'modelplane' },
    };
    for (const port of [443, 6379, 53]) expect(allows(policy!, { ...redis, port })).toBe(false);
  });

  it.each(INTERNAL)('never %s, an address the proxy refuses in media URLs too', (ip) => {
    expect(mediaUrlProblem(`https://${isIPv6(ip) ? `[${ip}]` : ip}/cat.png`)).not.toBeNull();
    for (const policy of [...egressPolicies(defaults), ...egressPolicies(allOn)])
      for (const port of [443, 80, 53]) expect(allows(policy, { ip, port }), `${ip}:${port}`).toBe(false);
  });

  it('values open the model store and extra rules, and can close public HTTPS', async () => {
    const objects = await render([
      '--set-json',
      'networkPolicy.engineEgress.modelStore={"to":[{"ipBlock":{"cidr":"10.20.0.0/16"}}],"ports":[{"port":9000}]}',
      '--set-json',
      'networkPolicy.engineEgress.extra=[{"to":[{"ipBlock":{"cidr":"192.168.5.5/32"}}],"ports":[{"port":3128}]}]',
      '--set',
      'networkPolicy.engineEgress.publicHttps.enabled=false',
    ]);
    const [policy] = egressPolicies(objects);
    expect(allows(policy!, { ip: '10.20.3.4', port: 9000 })).toBe(true);
    expect(allows(policy!, { ip: '10.20.3.4', port: 443 })).toBe(false);
    expect(allows(policy!, { ip: '192.168.5.5', port: 3128 })).toBe(true);
    expect(allows(policy!, { ip: '8.8.8.8', port: 443 }), 'public HTTPS is off').toBe(false);
    expect(allows(policy!, { ...kubeDns, port: 53, protocol: 'UDP' })).toBe(true);
  });

  it('an empty model store opens nothing; engineEgress.enabled=false renders no egress policy', async () => {
    expect((egressPolicies(defaults)[0]!.spec.egress as Rule[]).every((r) => r.to && r.to.length > 0)).toBe(
      true,
    );
    const off = await render(['--set', 'networkPolicy.engineEgress.enabled=false']);
    expect(egressPolicies(off)).toEqual([]);
    expect(off.some((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'mp-modelplane-engines')).toBe(
      true,
    );
  });

  it('the schema refuses a port that is not a number and a misspelt key', async () => {
    for (const args of [
      ['--set', 'networkPolicy.engineEgress.publicHttps.ports[0]=https'],
      ['--set', 'networkPolicy.engineEgress.modelStor.to=x'],
    ]) {
      const r = await helm(['template', 'mp', chartDir, ...args]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("values don't meet the specifications of the schema");
      expect(r.stderr).toMatch(/publicHttps|modelStor/);
    }
  });
});
