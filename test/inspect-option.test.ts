// The `inspect` option's Stately forms: 'stately' and { stately: { url, iframe } } are checked
// before anything starts, and only in a page (a browser) are they accepted.
import { afterEach, describe, expect, it } from 'vitest';
import { createRolebox } from '../src/index.js';
import { errorOf } from './support/errors.js';

const inPage = () => {
  (globalThis as { window?: unknown }).window = globalThis;
};

afterEach(() => {
  delete (globalThis as { window?: unknown }).window;
});

describe('inspect: Stately', () => {
  it("outside a page, 'stately' and { stately } are refused with what to use instead", () => {
    for (const inspect of ['stately', { stately: {} }] as const) {
      const error = errorOf(() => createRolebox({ inspect }));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toBe(
        "inspect: 'stately' opens Stately's inspector in a browser; in Node use { stately: { port } } to serve Stately viewers, or { url } with `rolebox inspect`",
      );
    }
  });

  it.each([
    [
      { stately: 'x' },
      'inspect.stately must be an object of url, iframe, maxDeferredEvents, port, host, got "x"',
    ],
    [
      { stately: { urll: 'http://a' } },
      'inspect.stately has no option "urll" (it takes url, iframe, maxDeferredEvents, port, host)',
    ],
    [
      { stately: { url: 'ws://a' } },
      'inspect.stately.url must be an http:// or https:// URL, got "ws://a"',
    ],
    [{ stately: { iframe: {} } }, 'inspect.stately.iframe must be an <iframe> element, got {}'],
    [
      { stately: { maxDeferredEvents: 0 } },
      'inspect.stately.maxDeferredEvents must be a whole number ≥ 1, got 0',
    ],
    [{ stately: { port: 0 } }, 'inspect.stately.port must be a port number from 1 to 65535, got 0'],
    [
      { stately: { port: '8080' } },
      'inspect.stately.port must be a port number from 1 to 65535, got "8080"',
    ],
    [
      { stately: { host: '0.0.0.0' } },
      'inspect.stately.host must be an address, given with port, got "0.0.0.0"',
    ],
    [
      { stately: { port: 8080, iframe: { setAttribute() {} } } },
      'inspect.stately.iframe is for a page, .port for Node: give one of them',
    ],
    [
      { stately: { constructor: 1 } },
      'inspect.stately has no option "constructor" (it takes url, iframe, maxDeferredEvents, port, host)',
    ],
  ])('refuses %j, in a page too', (inspect, message) => {
    inPage();
    const error = errorOf(() => createRolebox({ inspect: inspect as never }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(message);
  });

  it('in a page, accepts a url, an iframe and a bound', () => {
    inPage();
    const iframe = { setAttribute() {} };
    expect(() =>
      createRolebox({
        inspect: {
          stately: { url: 'http://localhost:3000/inspect', iframe, maxDeferredEvents: 10 },
        },
      }),
    ).not.toThrow();
  });
});
