// The chart pins its images by digest when given one (issue 40 item 10): each service's image is
// <registry>/<name>:<tag>@<digest>, so a node runs exactly the image that was built and tested,
// whatever the tag points to later; without one the tag alone, as before; a malformed digest is
// refused by the values schema.
import { describe, expect, it } from 'vitest';
import { chartDir, helm, type K8sObject, render } from './helm.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const imagesOf = (objects: K8sObject[]) =>
  Object.fromEntries(
    objects
      .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
      .map((o) => [o.metadata.name, o.spec.template.spec.containers[0].image as string]),
  );

describe('images pinned by digest', () => {
  it('each service image carries its digest when one is set, and the tag alone when not', async () => {
    const pinned = imagesOf(
      await render([
        '--set',
        `image.digests.proxy=${digest('a')}`,
        '--set',
        `image.digests.operator=${digest('b')}`,
        '--set',
        'image.tag=1.2.3',
      ]),
    );
    expect(pinned['mp-modelplane-proxy']).toBe(`ghcr.io/modelplane/proxy:1.2.3@${digest('a')}`);
    expect(pinned['mp-modelplane-operator']).toBe(`ghcr.io/modelplane/operator:1.2.3@${digest('b')}`);
    expect(pinned['mp-modelplane-console']).toBe('ghcr.io/modelplane/console:1.2.3');
    const plain = imagesOf(await render());
    for (const name of ['proxy', 'operator', 'console'])
      expect(plain[`mp-modelplane-${name}`]).toMatch(new RegExp(`^ghcr\\.io/modelplane/${name}:[^@]+$`));
  }, 120_000);

  it('refuses a digest that is not sha256:<64 hex>', async () => {
    const r = await helm(['template', 'mp', chartDir, '--set', 'image.digests.proxy=latest']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toMatch(/digests/);
  });
});
