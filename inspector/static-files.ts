// The page's files, served from this machine (no internet needed): only the names listed
// here at start are served, so no path from a request ever reaches the file system.

import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
// The page is plain files, not compiled: compiled to dist/inspector/, it is served from the
// sources two levels up.
const PAGE_DIR =
  [join(HERE, 'page'), join(HERE, '..', '..', 'inspector', 'page')].find((dir) =>
    existsSync(join(dir, 'index.html')),
  ) ?? join(HERE, 'page');
const ELK_BUNDLE = createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js');
const PAGE_TYPES: Readonly<Record<string, string>> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};
// The page's modules and styles, listed once: only these names are served (no path from a
// request ever reaches the file system).
/** What each request path serves: the page, its modules and styles, and the ELK bundle. */
export const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: join(PAGE_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  ...Object.fromEntries(
    (existsSync(PAGE_DIR) ? readdirSync(PAGE_DIR) : [])
      .filter((name) => /^[a-z][a-z0-9-]*\.(js|css)$/.test(name))
      .map((name) => [
        `/${name}`,
        {
          file: join(PAGE_DIR, name),
          type: PAGE_TYPES[name.split('.').at(-1) as string] as string,
        },
      ]),
  ),
  '/vendor/elk.bundled.js': { file: ELK_BUNDLE, type: 'text/javascript; charset=utf-8' },
};

/** Answers a plain HTTP request: a listed file (GET only), else 404; never a path from the request. */
export async function serveStatic(
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?')[0] as string;
  if (path === '/favicon.ico') {
    response.writeHead(204).end();
    return;
  }
  const entry = STATIC_FILES[path];
  if (!entry || request.method !== 'GET') {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  try {
    const body = await readFile(entry.file);
    // The page's URL carries its token: never send it on as a referrer.
    response
      .writeHead(200, {
        'content-type': entry.type,
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      })
      .end(body);
  } catch (error) {
    response
      .writeHead(500, { 'content-type': 'text/plain' })
      .end(`cannot read ${path}: ${(error as Error).message}`);
  }
}
