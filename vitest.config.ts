import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `rolebox-source` makes `import … from 'rolebox'` resolve to src/ (see package.json exports).
  // A name of its own: packages publish a `source` condition too (eventsource-parser, under
  // `ai`, points it at TypeScript Node cannot load), and a host's `source` must never point
  // into an installed rolebox.
  resolve: { conditions: ['rolebox-source'] },
  ssr: { resolve: { conditions: ['rolebox-source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
