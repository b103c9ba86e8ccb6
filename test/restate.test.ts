// rolebox on Restate (DESIGN §8), through a real restate-server on free ports: one shared
// scenario per workflow, run against the embedded API and through the ingress, must give
// the same receipts, views and events. The server binary comes from npm
// (@restatedev/restate-server); where it is not installed for the platform, these skip.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInspectorServer } from '../inspector/server.js';
import {
  createRolebox,
  defineFunction,
  type HostEvent,
  RoleboxError,
  type SessionHandle,
} from '../src/index.js';
import type { RestateSessionHandle, WireHostEvent } from '../src/restate/index.js';
import { wireHostEvent } from '../src/restate/wire.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  queryServer,
  type RestateRig,
  restateUnavailable,
  startRestateRig,
  untilServer,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate tests: ${unavailable}`);

const answered = 'signal_observed(answer)';
const FUNCTIONS = [defineFunction({ name: 'approval', gate: answered, continue_until: answered })];
const LIMITS = { interRoundDelayMs: 0 };
const workerText = (round: { round: number }) => `round ${round.round} done`;

/** A session both ways: the Restate handle, or the embedded one with every method made async. */
type Session = RestateSessionHandle;
type Side = {
  open(id: string, options?: { acceptanceMode?: 'user_confirmed' }): Promise<Session>;
  /** The host events of one session, as JSON, in order. */
  eventsOf(sessionId: string): WireHostEvent[];
};

function asAsync(handle: SessionHandle): Session {
  const forward = (target: object) =>
    new Proxy(target, {
      get(object, name) {
        const value = Reflect.get(object, name);
        return typeof value === 'function'
          ? async (...args: unknown[]) => value.apply(object, args)
          : value;
      },
    });
  return new Proxy(handle, {
    get(object, name) {
      if (name === 'artifacts') return forward(object.artifacts);
      const value = Reflect.get(object, name);
      return typeof value === 'function'
        ? async (...args: unknown[]) => value.apply(object, args)
        : value;
    },
  }) as unknown as Session;
}

/** The embedded side: simulated clock, seeded ids, a scripted dispatcher answering like the rig's worker. */
async function embeddedSide() {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    functions: FUNCTIONS,
    limits: LIMITS,
    clock,
    ids: seededIdSource(3),
    dispatcher: new ScriptedDispatcher((input) => workerText(input)),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const side: Side & { rb: typeof rb; drain(): Promise<void> } = {
    rb,
    open: async (id, options = {}) => asAsync(await rb.openSession({ id, ...options })),
    eventsOf: (sessionId) =>
      events
        .filter((event) => (event as { sessionId?: string }).sessionId === sessionId)
        .map(wireHostEvent),
    // Lets the scripted rounds run (zero delays: no time needs to pass).
    drain: async () => {
      for (let i = 0; i < 50; i++) {
        await settle();
        clock.advance(0);
      }
    },
  };
  return side;
}

/** The Restate side: the rig's client, with the events its calls brought back and the sink's. */
function restateSide(rig: RestateRig): Side {
  const returned: WireHostEvent[] = [];
  rig.client.on('*', (event) => returned.push(event));
  return {
    open: (id, options = {}) => rig.client.openSession({ id, ...options }),
    eventsOf: (sessionId) =>
      returned.filter((event) => (event as { sessionId?: string }).sessionId === sessionId),
  };
}

/**
 * What may differ between the two runs and nothing else: times (a simulated clock against
 * Restate's: every number from 1 000 up), ids made by the id source or the dispatcher
 * (loop, task and worker ids), and round durations (real time passes on Restate between a
 * round's dispatch and its worker's report).
 */
function normalized(value: unknown): unknown {
  if (typeof value === 'number') return value >= 1_000 ? '<time>' : value;
  if (typeof value === 'string')
    return (
      value
        .replace(/loop_[A-Za-z0-9_-]{8,21}/g, '<loop>')
        .replace(/worker_<loop>:\d+|worker-\d+/g, '<worker>')
        .replace(/task_<loop>:\d+|task-\d+/g, '<task>')
        .replace(/duration=\d+(\.\d+)?s/g, 'duration=<d>')
        .replace(/\(\d+(\.\d+)?s,/g, '(<d>,')
        // Each side draws its own incarnation nonce (seeded here, Restate's rand there).
        .replace(/:[0-9A-Za-z_-]{12,21}:e(\d+)\b/g, ':<nonce>:e$1')
    );
  if (Array.isArray(value)) return value.map(normalized);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value)
        // JSON has no undefined: a live context's `key: undefined` is no key once stored.
        .filter(([, entry]) => entry !== undefined)
        .map(([key, entry]) => [
          normalized(key) as string,
          key === 'durationMs' ? '<d>' : normalized(entry),
        ]),
    );
  return value ?? null;
}

async function approvalScenario(side: Side, id: string): Promise<unknown[]> {
  const session = await side.open(id);
  const out: unknown[] = [];
  out.push(await session.activate('approval'));
  out.push(await session.tool('|signal| type=need_approval, payload={"reason": "prod"}'));
  out.push(await session.view());
  out.push(await session.tool('|signal| type=answer, payload={"approved": true}'));
  out.push(await session.idle());
  out.push(await session.view());
  return out;
}

async function reviewScenario(side: Side, id: string): Promise<unknown[]> {
  const session = await side.open(id);
  const out: unknown[] = [];
  out.push(
    await session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    }),
  );
  out.push(await session.send({ type: 'user_submitted_input', text: 'A haiku about autumn' }));
  const decision = {
    id: 'd1',
    kind: 'run_worker',
    workerId: 'poet',
    requiresApproval: true,
  } as const;
  out.push(await session.send({ type: 'main_agent_decision_created', decision }));
  out.push(await session.send({ type: 'user_approved_next_step', decisionId: 'd1' }));
  out.push(
    await session.send({
      type: 'worker_started',
      workerId: 'poet',
      acceptanceMode: 'user_confirmed',
    }),
  );
  const draft = await session.artifacts.write({
    name: 'haiku',
    workerId: 'poet',
    content: 'Leaves let go, unasked',
  });
  out.push(draft);
  out.push(await session.send({ type: 'worker_completed', artifactId: draft.id }));
  out.push(await session.send({ type: 'user_accepted_artifact', artifactId: draft.id }));
  out.push(await session.facts());
  out.push(await session.artifacts.list());
  out.push(await session.view());
  return out;
}

describe.skipIf(unavailable !== undefined)('rolebox on Restate', () => {
  let rig: RestateRig;
  let embedded: Awaited<ReturnType<typeof embeddedSide>>;
  let onRestate: Side;

  beforeAll(async () => {
    rig = await startRestateRig({ functions: FUNCTIONS, limits: LIMITS });
    rig.answerWith(workerText);
    onRestate = restateSide(rig);
    embedded = await embeddedSide();
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await embedded?.rb.stop();
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    'runs the approval workflow with the embedded receipts, views and events',
    async () => {
      const here = await approvalScenario(embedded, 'approval-1');
      const there = await approvalScenario(onRestate, 'approval-1');
      expect(normalized(there)).toEqual(normalized(here));
      expect((here[5] as { functions: { phase: string }[] }).functions[0]?.phase).toBe('complete');
      expect(normalized(onRestate.eventsOf('approval-1'))).toEqual(
        normalized(embedded.eventsOf('approval-1')),
      );
      // The sink got every one of them too, in step order. It is sent them after each step
      // commits, so the last ones may still be on their way when the last call returns.
      await expect
        .poll(() => normalized(rig.eventsOf('approval-1')), { timeout: 30_000 })
        .toEqual(normalized(embedded.eventsOf('approval-1')));
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'runs a runtime-session review cycle with the embedded results, artifacts and effects',
    async () => {
      const here = await reviewScenario(embedded, 'review-1');
      const there = await reviewScenario(onRestate, 'review-1');
      expect(normalized(there)).toEqual(normalized(here));
      expect(here[8]).toEqual([expect.objectContaining({ name: 'haiku', status: 'accepted' })]);
      expect(normalized(onRestate.eventsOf('review-1'))).toEqual(
        normalized(embedded.eventsOf('review-1')),
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'runs a 3-round loop through the worker service with the embedded notes, rounds and view',
    async () => {
      const text = '|loop:3| write a haiku';
      const hereSession = await embedded.open('loop-1');
      const hereStart = await hereSession.startLoop(text);
      await embedded.drain();
      const thereSession = await onRestate.open('loop-1');
      const thereStart = await thereSession.startLoop(text);
      await rig.waitForEvent('loop-1', (event) => event.type === 'loop_finished');
      expect(normalized(thereStart)).toEqual(normalized(hereStart));
      const hereEvents = embedded.eventsOf('loop-1');
      expect(hereEvents.filter((event) => event.type === 'round_started')).toHaveLength(3);
      expect(normalized(rig.eventsOf('loop-1'))).toEqual(normalized(hereEvents));
      expect(normalized(await thereSession.view())).toEqual(normalized(await hereSession.view()));
      // Each round ran once, in order.
      expect(
        rig.rounds
          .filter((round) => round.originSessionId === 'loop-1')
          .map((round) => round.round),
      ).toEqual([1, 2, 3]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses bad input through the ingress with the RoleboxError code, and changes nothing',
    async () => {
      const session = await rig.client.openSession({ id: 'bad-input' });
      await session.activate('approval');
      const before = await session.view();
      const refusals: [string, () => Promise<unknown>][] = [
        ['unknown_signal_type', () => session.signal({ type: 'approve' } as never)],
        ['malformed_signal_text', () => session.tool('|signal| type=answer payload={}')],
        ['unknown_function', () => session.activate('__proto__')],
        ['function_already_active', () => session.activate('approval')],
        ['invalid_event', () => session.send({ type: 'no_such_event' } as never)],
        ['event_not_allowed', () => session.send({ type: 'flow_completed' } as never)],
        ['unknown_artifact', () => session.artifacts.setStatus('art-9', 'accepted')],
        ['invalid_argument', () => session.setSlot('', 1)],
        ['unknown_session', () => rig.client.session('never-opened').idle()],
      ];
      for (const [code, call] of refusals) {
        const error = await call().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error, code).toBeInstanceOf(RoleboxError);
        expect((error as RoleboxError).code, (error as Error).message).toBe(code);
      }
      expect(await session.view()).toEqual(before);
      // A body that is not the argument list, straight to the ingress.
      const response = await fetch(`${rig.server.ingressUrl}/rolebox-session/bad-input/tool`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: '|signal| type=answer' }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        metadata: { 'rolebox-code': 'invalid_argument' },
      });
      // A report from no worker of this session is refused too, and changes nothing.
      const report = await fetch(
        `${rig.server.ingressUrl}/rolebox-session/bad-input/workerTerminated`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ taskId: 7 }),
        },
      );
      expect(report.status).toBe(400);
      expect(await session.view()).toEqual(before);
      expect(() => rig.client.session('not an id!')).toThrow(RoleboxError);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'applies concurrent commands to one session one at a time: none is lost',
    async () => {
      const session = await rig.client.openSession({ id: 'concurrent-1' });
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      await Promise.all(keys.map((key, i) => session.setSlot(key, i)));
      const { slots } = await session.view();
      expect(slots).toEqual(Object.fromEntries(keys.map((key, i) => [key, i])));
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'opens get-or-open: opening a stored session again answers it as it is',
    async () => {
      const first = await rig.client.openSession({ id: 'reopen-1' });
      await first.activate('approval');
      const again = await rig.client.openSession({ id: 'reopen-1' });
      expect((await again.view()).functions.map((fn) => fn.name)).toEqual(['approval']);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'stores each record as plain JSON, and still reads the JSON-string form earlier versions stored (issue 27 item 19)',
    async () => {
      const session = await rig.client.openSession({ id: 'stored-1' });
      await session.activate('approval');
      await session.tool('|signal| type=need_approval, payload={"reason": "prod"}');
      const state = () =>
        queryServer(
          rig.server,
          "SELECT key, value_utf8 FROM state WHERE service_name = 'rolebox-session' AND service_key = 'stored-1'",
        ).then(
          (rows) =>
            new Map(rows.map((row) => [String(row.key), JSON.parse(String(row.value_utf8))])),
        );
      const stored = await state();
      expect(stored.get('recordIds')).toEqual(['stored-1', '$system']);
      // One parse gives the envelope: what `restate kv get` shows is JSON, not a string of it.
      for (const id of ['stored-1', '$system'])
        expect(stored.get(`record:${id}`)).toMatchObject({ format: 'rolebox.snapshot' });

      // The form the previous version wrote: each record a JSON string holding the envelope.
      const oldForm: Record<string, number[]> = {};
      for (const [key, value] of stored) {
        const written = key.startsWith('record:') ? JSON.stringify(value) : value;
        oldForm[key] = [...Buffer.from(JSON.stringify(written))];
      }
      const patched = await fetch(`${rig.server.adminUrl}/services/rolebox-session/state`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ object_key: 'stored-1', new_state: oldForm }),
      });
      expect(patched.status).toBe(202);
      await untilServer(
        async () => typeof (await state()).get('record:stored-1') === 'string',
        'the old string form stored',
      );
      expect((await session.view()).functions[0]?.phase).toBe('gated');
      await session.tool('|signal| type=answer, payload={"approved": true}');
      expect((await session.idle()).completed).toEqual(['approval']);
      // The record the step changed is written back in the new form.
      expect((await state()).get('record:stored-1')).toMatchObject({ format: 'rolebox.snapshot' });

      // Anything else where a record belongs is refused as corrupt, naming the session.
      const corrupt = { ...oldForm, 'record:stored-1': [...Buffer.from('42')] };
      await fetch(`${rig.server.adminUrl}/services/rolebox-session/state`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ object_key: 'stored-1', new_state: corrupt }),
      });
      await untilServer(
        async () => (await state()).get('record:stored-1') === 42,
        'the corrupt record stored',
      );
      const refused = await session.view().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(RoleboxError);
      expect(refused).toMatchObject({ code: 'invalid_snapshot' });
      expect((refused as Error).message).toContain('"stored-1"');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "streams each step to the inspector: the session's actors under its id, two sessions apart",
    async () => {
      const inspector = await startInspectorServer({ port: 0 });
      const watched = await startRestateRig({
        functions: FUNCTIONS,
        inspect: { url: inspector.wsUrl },
      });
      try {
        for (const id of ['seen-1', 'seen-2']) {
          const session = await watched.client.openSession({ id });
          await session.activate('approval');
          await session.tool('|signal| type=need_approval, payload={"reason": "prod"}');
        }
        const sessionActor = (id: string) =>
          inspector
            .actors()
            .find(
              (actor) => actor.sessionId.startsWith(`${id}:`) && actor.name === `session:${id}`,
            );
        // Frames travel over a socket: wait for the inspector to have them.
        await untilInspected(() => sessionActor('seen-1') && sessionActor('seen-2'));
        const approval = inspector
          .actors()
          .find(
            (actor) => actor.sessionId.startsWith('seen-1:') && actor.name === 'fn:seen-1:approval',
          );
        // The function's actor, gated by the pausing signal, as the last step left it.
        await untilInspected(() =>
          inspector
            .actors()
            .some(
              (actor) =>
                actor.name === 'fn:seen-1:approval' &&
                (actor.snapshot as { value?: unknown }).value === 'gated',
            ),
        );
        expect(approval).toBeDefined();
        expect(sessionActor('seen-1')?.sessionId).not.toBe(sessionActor('seen-2')?.sessionId);
      } finally {
        await watched.stop();
        await inspector.stop();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

/** Waits (on the inspector's socket, not a clock) until `check` holds. */
async function untilInspected(check: () => unknown): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(check()).toBeTruthy();
}
