// `make e2e-images`: the image test alone (it is outside `make test`, whose budget the image build
// does not fit: test/images/images.e2e.ts).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/images/*.e2e.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 1_200_000,
  },
});
