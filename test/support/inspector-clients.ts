import WebSocket from 'ws';
import type { InspectorServer } from '../../inspector/server.js';

/** A message the inspector server sent, parsed. */
export type Message = Record<string, unknown>;

/** A WebSocket client with every message it received, and a way to wait for one. */
export async function openSocket(url: string, options: { origin?: string } = {}) {
  const socket = new WebSocket(url, options.origin ? { origin: options.origin } : {});
  const messages: Message[] = [];
  const waiters: {
    predicate: (message: Message) => boolean;
    resolve: (message: Message) => void;
  }[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as Message;
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return {
    socket,
    messages,
    /** Sends a frame (JSON unless already text). */
    send: (frame: unknown) =>
      socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    /** The first message (received already or still to come) that matches. */
    next(predicate: (message: Message) => boolean): Promise<Message> {
      const seen = messages.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
  };
}

/** A page connected to the server's `/ui` socket (with its token). */
export const openPage = (server: InspectorServer) =>
  openSocket(`${server.wsUrl}/ui?token=${server.token}`);

/** An app connected to the server's app socket; `hello` makes it a rolebox app (it takes commands). */
export async function openApp(server: InspectorServer, hello?: string) {
  const app = await openSocket(server.wsUrl);
  if (hello) app.send({ type: 'rolebox.app', name: hello, pid: 4242 });
  return app;
}
