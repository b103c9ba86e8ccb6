import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `source` makes `import … from 'rolebox'` resolve to src/ (see package.json exports).
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // eventsource-parser (under `ai`) has a `source` condition too, pointing at TypeScript
    // Node cannot load: what imports it goes through Vite, which compiles it.
    server: { deps: { inline: [/\/node_modules\/(ai|@ai-sdk\/[^/]+|eventsource-parser)\//] } },
  },
});
