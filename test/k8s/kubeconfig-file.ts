// A kubeconfig file for a test cluster's admin token, for programs that read one (helm, the
// controllers, kwok, the operator as a process).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestCluster } from './cluster.ts';

export function writeKubeconfig(
  cluster: Pick<TestCluster, 'server' | 'ca'>,
  token: string,
  path = join(mkdtempSync(join(tmpdir(), 'mp-kubeconfig-')), 'kubeconfig'),
): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 't',
        cluster: { server: cluster.server, 'certificate-authority-data': cluster.ca.toString('base64') },
      },
    ],
    users: [{ name: 'u', user: { token } }],
    contexts: [{ name: 't', context: { cluster: 't', user: 'u' } }],
    'current-context': 't',
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}
