// The page's files on their own: only the names listed at start are served, GET only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { STATIC_FILES, serveStatic } from '../inspector/static-files.js';

async function get(url: string, method = 'GET') {
  let status = 0;
  let headers: Record<string, string> = {};
  let body = '';
  const response = {
    writeHead(code: number, head: Record<string, string> = {}) {
      status = code;
      headers = head;
      return response;
    },
    end(chunk?: Buffer | string) {
      body = chunk === undefined ? '' : chunk.toString();
    },
  };
  await serveStatic({ url, method } as IncomingMessage, response as unknown as ServerResponse);
  return { status, headers, body };
}

describe('the static files', () => {
  it('lists the page, its modules and styles, and the ELK bundle', () => {
    const paths = Object.keys(STATIC_FILES);
    expect(paths).toContain('/');
    expect(paths).toContain('/vendor/elk.bundled.js');
    expect(paths.some((path) => path.endsWith('.css'))).toBe(true);
    for (const path of paths)
      expect(path).toMatch(/^\/([a-z][a-z0-9-]*\.(js|css)|vendor\/elk\.bundled\.js)?$/);
  });

  it('serves the page without caching and without a referrer, whatever its query', async () => {
    const page = await get('/?token=secret');
    expect(page.status).toBe(200);
    expect(page.headers).toEqual({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    });
    expect(page.body).toMatch(/<html/i);
  });

  it('answers 404 to any other path or method, and 204 to the favicon', async () => {
    expect((await get('/../package.json')).status).toBe(404);
    expect((await get('/%2e%2e/package.json')).status).toBe(404);
    expect((await get('/index.html')).status).toBe(404);
    expect((await get('/', 'POST')).status).toBe(404);
    expect((await get('/favicon.ico')).status).toBe(204);
  });
});
