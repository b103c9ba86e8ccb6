import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `source` makes `import … from 'rolebox'` resolve to src/ (see package.json exports).
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
