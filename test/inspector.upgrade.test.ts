// The upgrade gate on its own: which WebSocket upgrades it lets through to pages and apps,
// and how it answers the rest (no server, no socket: a request object and a stream).
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { originsOf, UpgradeGate } from '../inspector/upgrade.js';

const TOKEN = 'a-token-of-24-characters';

function gateWith(options: { host?: string; appOrigins?: string[]; port?: number } = {}) {
  const accepted: string[] = [];
  const logged: string[] = [];
  const gate = new UpgradeGate({
    token: TOKEN,
    appOrigins: new Set(options.appOrigins ?? []),
    host: options.host ?? '127.0.0.1',
    log: (message) => logged.push(message),
    acceptPage: () => accepted.push('page'),
    acceptApp: () => accepted.push('app'),
  });
  gate.listening(options.port ?? 7070);
  /** Offers one upgrade; returns what the socket was answered (empty when let through). */
  const offer = (url: string, headers: Record<string, string> = {}) => {
    const socket = new PassThrough();
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
    });
    gate.upgrade({ url, headers } as unknown as IncomingMessage, socket, Buffer.alloc(0));
    return answer;
  };
  return { gate, accepted, logged, offer };
}

describe('the upgrade gate', () => {
  it('lets a page in with the token, from no origin or its own', () => {
    const { accepted, offer, gate } = gateWith();
    expect(offer(`/ui?token=${TOKEN}`)).toBe('');
    expect(offer(`/ui?token=${TOKEN}`, { origin: 'http://localhost:7070' })).toBe('');
    expect(offer(`/ui?token=${TOKEN}`, { origin: 'http://[::1]:7070' })).toBe('');
    expect(accepted).toEqual(['page', 'page', 'page']);
    expect(gate.refused).toBe(0);
  });

  it('refuses a page without the token, with a wrong one, or from a foreign origin', () => {
    const { accepted, offer, gate, logged } = gateWith();
    expect(offer('/ui')).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n[\s\S]*page without a token/);
    expect(offer('/ui?token=wrong')).toMatch(/^HTTP\/1\.1 401 [\s\S]*page with a wrong token\n$/);
    expect(offer(`/ui?token=${TOKEN}x`)).toMatch(/401/);
    expect(offer(`/ui?token=${TOKEN}`, { origin: 'http://evil.example' })).toMatch(
      /^HTTP\/1\.1 403 Forbidden\r\n[\s\S]*page from origin "http:\/\/evil\.example"/,
    );
    expect(offer(`/ui?token=${TOKEN}`, { origin: 'http://localhost:7071' })).toMatch(/403/);
    expect(accepted).toEqual([]);
    expect(gate.refused).toBe(5);
    expect(logged).toHaveLength(5);
    expect(logged[0]).toMatch(/^refused a connection: page without a token/);
  });

  it('bound to every interface, takes the page from the host name it was asked for', () => {
    const { accepted, offer } = gateWith({ host: '0.0.0.0' });
    const headers = { origin: 'http://box.lan:7070', host: 'box.lan:7070' };
    expect(offer(`/ui?token=${TOKEN}`, headers)).toBe('');
    expect(offer(`/ui?token=${TOKEN}`, { ...headers, host: 'other:7070' })).toMatch(/403/);
    expect(accepted).toEqual(['page']);
  });

  it('lets an app in from no origin or an allowed one, and refuses other browser origins', () => {
    const { accepted, offer, gate } = gateWith({ appOrigins: ['http://localhost:5173'] });
    expect(offer('/')).toBe('');
    expect(offer('/', { origin: 'http://localhost:5173' })).toBe('');
    expect(offer('/', { origin: 'http://localhost:5174' })).toMatch(
      /^HTTP\/1\.1 403 [\s\S]*app from browser origin "http:\/\/localhost:5174" \(allow it with appOrigins\)/,
    );
    expect(accepted).toEqual(['app', 'app']);
    expect(gate.refused).toBe(1);
  });

  it('destroys the socket of an upgrade it cannot read, and logs why, without throwing', () => {
    const { accepted, logged, gate } = gateWith();
    const socket = new PassThrough();
    // No headers at all: reading its Origin throws.
    gate.upgrade({ url: '/' } as unknown as IncomingMessage, socket, Buffer.alloc(0));
    expect(socket.destroyed).toBe(true);
    expect(accepted).toEqual([]);
    expect(logged).toEqual([expect.stringMatching(/^refused a connection: /)]);
  });

  it("knows a loopback host's aliases as the page's own origins", () => {
    expect([...originsOf('localhost', 80)]).toEqual([
      'http://127.0.0.1:80',
      'http://localhost:80',
      'http://[::1]:80',
    ]);
    expect([...originsOf('10.0.0.2', 7070)]).toEqual(['http://10.0.0.2:7070']);
  });
});
