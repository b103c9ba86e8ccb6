// The inspector's pages on their own: a page's first messages, its frames, and the bound
// on what may wait unsent for a page that does not read.
import { describe, expect, it } from 'vitest';
import type { Frame } from '../inspector/kept-records.js';
import { type Page, Pages } from '../inspector/pages.js';
import { FakeSocket } from './support/fake-socket.js';

function pagesWith(pageBufferBytes = 100, after = ['{"type":"position"}']) {
  const frames: [number, Frame | null][] = [];
  const droppedPages: number[] = [];
  const logged: string[] = [];
  const pages = new Pages({
    pageBufferBytes,
    maxDepth: 4,
    log: (message) => logged.push(message),
    firstMessages: () => ({ init: '{"type":"init"}', after }),
    onFrame: (page, frame) => frames.push([page.id, frame]),
    onDropped: (page: Page) => droppedPages.push(page.id),
  });
  return { pages, frames, droppedPages, logged };
}

describe('the pages', () => {
  it('sends a new page everything kept, then what the sources have for it', () => {
    const { pages } = pagesWith();
    const socket = new FakeSocket();
    const page = pages.connect(socket.ws);
    expect(page.id).toBe(1);
    expect(socket.messages()).toEqual([{ type: 'init' }, { type: 'position' }]);
    expect(pages.size).toBe(1);
  });

  it('broadcasts to every open page, and skips one that is not open', () => {
    const { pages } = pagesWith();
    const open = new FakeSocket();
    const closing = new FakeSocket();
    pages.connect(open.ws);
    pages.connect(closing.ws);
    closing.readyState = 2;
    pages.broadcast('{"type":"x"}');
    expect(open.sent.at(-1)).toBe('{"type":"x"}');
    expect(closing.sent.at(-1)).not.toBe('{"type":"x"}');
  });

  it('disconnects a page that does not read, once its backlog passes pageBufferBytes', () => {
    // No message after the first: one sent with the backlog drained would end its allowance.
    const { pages, droppedPages, logged } = pagesWith(100, []);
    const socket = new FakeSocket();
    const page = pages.connect(socket.ws);
    // The first message is allowed on top: a big init may wait while the page loads.
    socket.bufferedAmount = 100 + Buffer.byteLength('{"type":"init"}');
    pages.send(page, '{"type":"a"}');
    expect(socket.terminated).toBe(false);
    // Once it drained to within the plain allowance, only that holds.
    socket.bufferedAmount = 50;
    pages.send(page, '{"type":"b"}');
    socket.bufferedAmount = 101;
    pages.send(page, '{"type":"c"}');
    expect(socket.terminated).toBe(true);
    expect(socket.sent.at(-1)).toBe('{"type":"b"}');
    expect(droppedPages).toEqual([1]);
    expect(pages.size).toBe(0);
    expect(logged).toEqual([
      'disconnected page 1: it does not read (101 bytes waiting, pageBufferBytes 100)',
    ]);
  });

  it('hands on a page frame parsed, and drops one that is not JSON or too deep', () => {
    const { pages, frames, logged } = pagesWith();
    const socket = new FakeSocket();
    pages.connect(socket.ws);
    socket.emit('message', Buffer.from('{"type":"command"}'));
    socket.emit('message', Buffer.from('not json'));
    socket.emit('message', Buffer.from('[[[[[[1]]]]]]'));
    expect(frames).toEqual([[1, { type: 'command' }]]);
    expect(logged).toHaveLength(2);
    expect(logged[1]).toBe('dropped a frame from page 1: nested deeper than 4 levels');
  });

  it('a page that closes is dropped, and a handler that throws is logged, not thrown', () => {
    const { pages, droppedPages, logged } = pagesWith();
    const socket = new FakeSocket();
    pages.connect(socket.ws);
    socket.emit('error', new Error('reset'));
    socket.emit('close');
    expect(droppedPages).toEqual([1]);
    expect(logged).toEqual(['page 1 socket error: reset']);
  });
});
