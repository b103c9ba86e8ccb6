import { rmSync } from 'node:fs';
import * as restate from '@restatedev/restate-sdk';
import type {
  FunctionDefinition,
  RoleboxLimits,
  RoundInput,
  RoundResult,
} from '../../src/index.js';
import {
  createRestateRolebox,
  type HostEventBatch,
  type ListeningEndpoint,
  type LocalRestateServer,
  type RestateRolebox,
  restateServerBinary,
  roleboxWorker,
  serveRoleboxOnRestate,
  startLocalRestateServer,
  type WireHostEvent,
} from '../../src/restate/index.js';
import { listen } from '../../src/restate/serve.js';

/** The rows of a query on the server's system tables (`sys_invocation`, …). */
export async function queryServer(
  server: LocalRestateServer,
  sql: string,
): Promise<Record<string, unknown>[]> {
  const response = await fetch(`${server.adminUrl}/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: sql }),
  });
  if (!response.ok) throw new Error(`query failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { rows: Record<string, unknown>[] }).rows;
}

/**
 * Resolves once `check` holds, asking again after each answer of the server (no clock is
 * involved: the wait is for the server, which runs on its own). Fails after `attempts`.
 */
export async function untilServer(
  check: () => Promise<boolean>,
  what: string,
  attempts = 600,
): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the server never got to: ${what}`);
}

/** Why the Restate tests cannot run here, or undefined when they can. */
export function restateUnavailable(): string | undefined {
  return restateServerBinary()
    ? undefined
    : 'no restate-server binary for this platform in node_modules (@restatedev/restate-server)';
}

/** What the rig's worker service answers for a round: its text, a failure, or `'hang'` (it never ends). */
export type RigWorkerAnswer = (round: RoundInput) => string | RoundResult | 'hang';

/** A Restate server with an in-process rolebox endpoint, its worker service and event sink. */
export interface RestateRig {
  readonly server: LocalRestateServer;
  readonly endpoint: ListeningEndpoint;
  readonly client: RestateRolebox;
  /** Replaces what the worker service answers. */
  answerWith(answer: RigWorkerAnswer): void;
  /** Every round the worker service ran, in order. */
  readonly rounds: RoundInput[];
  /** How many times the worker ran each round, by `<session>/<round key>`. */
  readonly runs: Map<string, number>;
  /** The worker invocations of each round (Restate invocation ids), by `<session>/<round key>`. */
  readonly invocations: Map<string, Set<string>>;
  /** The events the sink received for a session, in step order. */
  eventsOf(sessionId: string): WireHostEvent[];
  /** SIGKILLs the server and starts it again on the same base dir and ports. */
  restartServer(): Promise<void>;
  /** Closes the endpoint (its invocations in flight fail, Restate retries them). */
  stopEndpoint(): Promise<void>;
  /** Serves the endpoint again on the same port. */
  startEndpoint(): Promise<void>;
  /** Resolves once the sink has received an event for `sessionId` that `matches`. */
  waitForEvent(sessionId: string, matches: (event: WireHostEvent) => boolean): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a server on free ports, an endpoint with these functions and limits, and registers it. */
export async function startRestateRig(
  options: {
    readonly functions?: readonly FunctionDefinition[];
    readonly limits?: Partial<RoleboxLimits>;
    /** False: this process serves only the worker and the sink; the sessions are served elsewhere. */
    readonly sessionsHere?: boolean;
    /** Streams the steps to an inspector server. */
    readonly inspect?: { readonly url: string };
  } = {},
): Promise<RestateRig> {
  // Retries come quickly: a test that stops its endpoint does not wait out a long backoff.
  const serverEnv = { RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: '1s' };
  let server = await startLocalRestateServer({ env: serverEnv });
  const batches: HostEventBatch[] = [];
  const waiters = new Set<() => void>();
  const rounds: RoundInput[] = [];
  const runs = new Map<string, number>();
  const invocations = new Map<string, Set<string>>();
  let answer: RigWorkerAnswer = (round) => `round ${round.round} done`;
  const sink = restate.service({
    name: 'test-sink',
    handlers: {
      hostEvents: async (_ctx: restate.Context, batch: HostEventBatch) => {
        batches.push(batch);
        for (const wake of [...waiters]) wake();
      },
    },
  });
  const worker = roleboxWorker('test-worker', async (ctx, round, request) => {
    const roundKey = `${request.session.key}/${request.key}`;
    const seen = invocations.get(roundKey) ?? new Set<string>();
    seen.add(ctx.request().id);
    invocations.set(roundKey, seen);
    const result = await ctx.run('answer', () => {
      rounds.push(round);
      const key = `${request.session.key}/${request.key}`;
      runs.set(key, (runs.get(key) ?? 0) + 1);
      const out = answer(round);
      return typeof out === 'string' ? { text: out, hadError: out === 'hang' } : out;
    });
    // A worker that never ends (until the session cancels its invocation).
    if ((result as RoundResult).text === 'hang') await ctx.sleep(24 * 3_600_000);
    return result as RoundResult;
  });
  const served =
    options.sessionsHere === false
      ? {
          listen: (port: number) =>
            listen(
              restate
                .endpoint()
                .bind(sink)
                .bind(worker)
                .setLogger(() => {}),
              port,
              '127.0.0.1',
            ),
        }
      : serveRoleboxOnRestate({
          ...(options.functions ? { functions: options.functions } : {}),
          ...(options.limits ? { limits: options.limits } : {}),
          ...(options.inspect ? { inspect: options.inspect } : {}),
          workers: { service: 'test-worker' },
          eventSink: { service: 'test-sink' },
          services: [sink, worker],
        });
  let endpoint: ListeningEndpoint | undefined;
  try {
    endpoint = await served.listen(0);
    await server.register(endpoint.url);
  } catch (error) {
    await endpoint?.close();
    await server.kill();
    rmSync(server.baseDir, { recursive: true, force: true });
    throw error;
  }
  // A batch may arrive twice (the server died after running the sink, before recording
  // that it had): a consumer keeps one per (session, seq), as this one does. The same event
  // in two batches would still show twice.
  const eventsOf = (sessionId: string) => sunkEvents(batches, sessionId);
  let bound = endpoint;
  let open = true;
  return {
    get server() {
      return server;
    },
    restartServer: async () => {
      await server.kill();
      server = await startLocalRestateServer({
        env: serverEnv,
        baseDir: server.baseDir,
        ports: server.ports,
      });
    },
    get endpoint() {
      return bound;
    },
    client: createRestateRolebox({ ingressUrl: server.ingressUrl }),
    answerWith: (next) => {
      answer = next;
    },
    rounds,
    runs,
    invocations,
    eventsOf,
    waitForEvent: (sessionId, matches) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!eventsOf(sessionId).some(matches)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    stopEndpoint: async () => {
      open = false;
      await bound.close();
    },
    startEndpoint: async () => {
      bound = await served.listen(bound.port);
      open = true;
    },
    stop: async () => {
      if (open) await bound.close();
      await server.stop();
      // A server restarted on the first one's base dir was given it, so it leaves it: here
      // it goes (the first server's own stop() would have removed it).
      rmSync(server.baseDir, { recursive: true, force: true });
    },
  };
}

/** A server on free ports with one endpoint registered, and a client through its ingress. */
export interface ServedRestate {
  readonly server: LocalRestateServer;
  /** The endpoint now serving (replaced by `restartEndpoint`). */
  readonly endpoint: ListeningEndpoint;
  readonly client: RestateRolebox;
  /** Closes the endpoint (its invocations in flight fail) and serves it again on its port. */
  restartEndpoint(between?: () => void): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a server whose retries come within a second, serves `served` on it and registers it. */
export async function startServedRestate(served: {
  listen(port: number): Promise<ListeningEndpoint>;
}): Promise<ServedRestate> {
  const server = await startLocalRestateServer({
    env: { RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: '1s' },
  });
  let endpoint: ListeningEndpoint | undefined;
  try {
    endpoint = await served.listen(0);
    await server.register(endpoint.url);
  } catch (error) {
    await endpoint?.close().catch(() => {});
    await server.stop();
    rmSync(server.baseDir, { recursive: true, force: true });
    throw error;
  }
  let bound = endpoint;
  return {
    server,
    get endpoint() {
      return bound;
    },
    client: createRestateRolebox({ ingressUrl: server.ingressUrl }),
    restartEndpoint: async (between) => {
      await bound.close();
      between?.();
      bound = await served.listen(bound.port);
    },
    stop: async () => {
      await bound.close().catch(() => {});
      await server.stop();
      rmSync(server.baseDir, { recursive: true, force: true });
    },
  };
}

/**
 * A place a handler waits at until the test lets it go: `arm()` before the run, the handler
 * calls `reach()`, the test awaits `reached` and calls `release()`.
 */
export class HandlerGate {
  reached: Promise<void> = Promise.resolve();
  private passed: Promise<void> = Promise.resolve();
  private onReach: () => void = () => {};
  private onRelease: () => void = () => {};

  /** Makes the next `reach()` wait until `release()`. */
  arm(): void {
    this.reached = new Promise<void>((resolve) => {
      this.onReach = resolve;
    });
    this.passed = new Promise<void>((resolve) => {
      this.onRelease = resolve;
    });
  }

  /** Called by the handler: says it is here, and waits to be let go. */
  reach(): Promise<void> {
    this.onReach();
    return this.passed;
  }

  /** Lets the waiting handler go on. */
  release(): void {
    this.onRelease();
  }
}

/** The events in a sink's batches for one session, one batch per `seq`, in order. */
export function sunkEvents(batches: readonly HostEventBatch[], sessionId: string): WireHostEvent[] {
  const bySeq = new Map<number, HostEventBatch>();
  for (const batch of batches) if (batch.sessionId === sessionId) bySeq.set(batch.seq, batch);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq).flatMap((batch) => batch.events);
}
