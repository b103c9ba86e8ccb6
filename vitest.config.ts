import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `rolebox-source` makes `import … from 'rolebox'` resolve to src/ (see package.json exports;
  // a name of its own, so a host's `source` condition never points into an installed rolebox).
  resolve: { conditions: ['rolebox-source'] },
  ssr: { resolve: { conditions: ['rolebox-source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
