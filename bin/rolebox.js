#!/usr/bin/env node
// The `rolebox` command. In a checkout with its TypeScript sources (and tsx installed) it
// runs them directly; an installed package runs the compiled JavaScript in dist/. Either
// way it is this one Node process, so signals reach rolebox itself.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);

async function loadTsx() {
  try {
    const { register } = await import('tsx/esm/api');
    register();
    return true;
  } catch {
    return false;
  }
}

let entry;
if (existsSync(source) && (await loadTsx())) entry = source;
else if (existsSync(compiled)) entry = compiled;
else {
  console.error(
    'rolebox: found neither the TypeScript sources with tsx nor a build in dist/ (run npm run build)',
  );
  process.exit(1);
}
const { main } = await import(entry.href);
// Leaves explicitly: a worker watcher or socket must not keep a finished command alive.
process.exit(await main(process.argv.slice(2)));
