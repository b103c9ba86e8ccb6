import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ArtifactsHandle,
  createPipeline,
  createRolebox,
  defineFunction,
  isRoleboxError,
  MemorySnapshotStore,
  type Rolebox,
  RUNTIME_EVENT_TYPES,
  SessionHandle,
  SIGNAL_TYPES,
} from '../src/index.js';
import { CommandDispatcher } from '../src/node.js';
import { ROLEBOX_OPTION_NAMES } from '../src/rolebox/options.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { fuzzSettings } from './support/fuzz.js';

// Random sequences of facade calls, good and bad, on one session: every call either
// applies or throws a RoleboxError, and a refused call leaves the session exactly as it
// was (its view and its persisted snapshot). ROLEBOX_FUZZ_RUNS sets the sequences.
vi.setConfig({ testTimeout: 120_000 });

const FUNCTIONS = [
  defineFunction({
    name: 'approval',
    gate: 'signal_observed(answer)',
    continue_until: 'signal_observed(answer)',
    observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
    transitions: [{ when: 'signal_observed(escalate)', activate: ['helper'] }],
  }),
  defineFunction({
    name: 'helper',
    requires_evidence: ['wrote'],
    observe: [{ tool: 'write_file', set_evidence: 'wrote' }],
  }),
  defineFunction({ name: 'worker', continue_until: 'turn_count(2)', continue_max: 2 }),
];

const names = fc.constantFrom(
  'approval',
  'helper',
  'worker',
  'ghost',
  '__proto__',
  'constructor',
  'toString',
  '',
);
const keys = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('__proto__', 'constructor', '__signals_observed', 'k'),
);
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '|signal| type=answer',
    '|signal| type=need_approval, payload={"reason": "prod"}',
    '|signal| type=escalate',
    '|signal| type=__proto__',
    '|signal| type=answer, payload={"__proto__": {"x": 1}}',
    '|loop:2| draft the notes',
    '|loop:2,constructor| x',
    '|loop:0| x',
    '|write_file| notes.md',
    '|read_blackboard|',
    'hello [rolebox:stop-loop]',
    '/stop-loop',
  ),
);
const json = fc.jsonValue({ maxDepth: 3 });
const throwing = () => {
  throw new Error('hostile');
};
/**
 * Values that throw when read (issue 22), as makers: made inside the call, since fast-check
 * itself reads the values it generates.
 */
const hostileValue = fc.constantFrom<() => unknown>(
  () => new Proxy({}, { get: throwing, ownKeys: throwing, getPrototypeOf: throwing }),
  () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  },
  () => Object.defineProperty({ type: 'answer' }, 'name', { get: throwing, enumerable: true }),
  () => new Proxy({ type: 'answer', name: 'notes' }, { get: throwing }),
  () => ({ type: 'answer', toJSON: throwing }),
  () => ({ payload: [new Proxy({}, { getPrototypeOf: throwing })] }),
);
const oddValue = fc.oneof(
  json,
  fc.constantFrom(undefined, null, Number.NaN, Number.POSITIVE_INFINITY, () => 1, Symbol('s')),
  fc.date(),
  fc.constant(new Map([['a', 1]])),
  fc.constant(Object.create(null)),
);
const payload = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(fc.string({ maxLength: 5 }), json, { maxKeys: 3 }),
  oddValue,
);
const runtimeEvent = fc.oneof(
  fc.constantFrom(
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'session_started', availableSkills: [] },
    { type: 'skill_selected', skill: 'write' },
    { type: 'user_submitted_input', text: 'go' },
    { type: 'user_confirmed_intake' },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'w1', requiresApproval: true },
    },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd2', kind: 'ask_user', message: 'which?' },
    },
    { type: 'user_approved_next_step', decisionId: 'd1' },
    { type: 'user_rejected_next_step', decisionId: 'd9' },
    { type: 'worker_started', workerId: 'w1', acceptanceMode: 'user_confirmed' },
    { type: 'worker_needs_input', workerId: 'w1', questions: ['why?'] },
    { type: 'worker_completed', artifactId: 'art-1' },
    { type: 'user_accepted_artifact', artifactId: 'art-1' },
    { type: 'user_rejected_artifact', artifactId: 'art-1' },
    { type: 'user_requested_revision', instruction: 'shorter' },
    { type: 'programmatic_review_passed' },
    { type: 'flow_completed' },
    { type: 'runtime_failed', reason: 'boom' },
  ),
  fc.record(
    {
      type: fc.constantFrom(...RUNTIME_EVENT_TYPES, 'constructor', '__proto__', 'toString'),
      text: fc.string({ maxLength: 5 }),
      decisionId: fc.string({ maxLength: 3 }),
      artifactId: fc.constantFrom('art-1', 'art-2', ''),
      extra: oddValue,
    },
    { requiredKeys: ['type'] },
  ),
  oddValue,
);

/** Every method of a real session handle and of its artifacts handle (from their prototypes). */
const HANDLE_METHODS: readonly (readonly ['session' | 'artifacts', string])[] = (() => {
  const methods = (proto: object) =>
    Object.getOwnPropertyNames(proto).filter(
      (name) =>
        name !== 'constructor' &&
        typeof Object.getOwnPropertyDescriptor(proto, name)?.value === 'function',
    );
  return [
    ...methods(SessionHandle.prototype).map((name) => ['session', name] as const),
    ...methods(ArtifactsHandle.prototype).map((name) => ['artifacts', name] as const),
  ];
})();

/** One facade call. */
type Call = { readonly label: string; run(session: SessionHandle): unknown };
const call = (label: string, run: (session: SessionHandle) => unknown): Call => ({ label, run });

const calls: fc.Arbitrary<Call> = fc.oneof(
  names.map((name) => call(`activate(${name})`, (s) => s.activate(name))),
  names.map((name) => call(`deactivate(${name})`, (s) => s.deactivate(name))),
  names.map((name) => call(`resume(${name})`, (s) => s.resume(name))),
  fc
    .tuple(
      fc.oneof(
        fc.constantFrom(...SIGNAL_TYPES),
        fc.constantFrom('approve', '__proto__', 'constructor'),
      ),
      payload,
    )
    .map(([type, body]) =>
      call(`signal(${type})`, (s) => s.signal({ type, payload: body as never })),
    ),
  oddValue.map((value) => call('signal(odd)', (s) => s.signal(value as never))),
  text.map((value) => call(`tool(${JSON.stringify(value)})`, (s) => s.tool(value))),
  text.map((value) => call(`message(${JSON.stringify(value)})`, (s) => s.message(value))),
  fc.constant(call('idle()', (s) => s.idle())),
  runtimeEvent.map((event) =>
    call(`send(${JSON.stringify(event)})`, (s) => s.send(event as never)),
  ),
  fc
    .tuple(text, fc.oneof(fc.constant(undefined), fc.string({ maxLength: 4 }), oddValue))
    .map(([value, agent]) =>
      call(`startLoop(${JSON.stringify(value)})`, (s) =>
        s.startLoop(value, agent === undefined ? {} : { agent: agent as never }),
      ),
    ),
  fc
    .oneof(fc.constant({}), fc.constant({ now: true }), oddValue)
    .map((options) => call('stopLoop()', (s) => s.stopLoop(options as never))),
  fc
    .tuple(names, keys, oddValue)
    .map(([name, key, value]) => call(`setKv(${name}, ${key})`, (s) => s.setKv(name, key, value))),
  fc
    .tuple(keys, oddValue)
    .map(([key, value]) => call(`setSlot(${key})`, (s) => s.setSlot(key, value))),
  fc
    .tuple(
      fc.oneof(fc.constantFrom('read_blackboard', 'run_worker', ''), fc.string({ maxLength: 5 })),
      fc.constantFrom('loop', 'boundary', 'other'),
    )
    .map(([name, kind]) =>
      call(`toolCall(${name}, ${kind})`, (s) => s.toolCall({ name, kind: kind as never })),
    ),
  fc
    .tuple(fc.oneof(fc.constantFrom('notes', '名称', ''), fc.string({ maxLength: 5 })), oddValue)
    .map(([name, content]) =>
      call(`artifacts.write(${name})`, (s) =>
        s.artifacts.write({ name, content: content as never }),
      ),
    ),
  fc
    .tuple(
      fc.constantFrom('art-1', 'art-2', 'nope'),
      fc.constantFrom('under_review', 'accepted', 'rejected', 'bogus'),
    )
    .map(([id, status]) =>
      call(`artifacts.setStatus(${id}, ${status})`, (s) =>
        s.artifacts.setStatus(id, status as never),
      ),
    ),
  // Any method of either handle with a value that throws when read, in any position.
  fc
    .tuple(
      fc.constantFrom(...HANDLE_METHODS),
      fc.nat({ max: 2 }),
      hostileValue,
      fc.constantFrom<unknown>('approval', 'k', { type: 'answer' }),
    )
    .map(([[on, method], position, make, filler]) =>
      call(`${on}.${method}(hostile at ${position})`, (s) => {
        const args: unknown[] = [filler, filler, filler];
        args[position] = make();
        const target = (on === 'session' ? s : s.artifacts) as unknown as Record<
          string,
          (...a: unknown[]) => unknown
        >;
        return target[method]?.(...args);
      }),
    ),
  // Closing the session: every later call of the sequence goes to a closed session.
  { arbitrary: fc.constant(call('close()', (s) => s.close())), weight: 1 },
);

describe('the facade under random call sequences', () => {
  let rb: Rolebox;
  let bystander: SessionHandle;
  let sequence = 0;
  beforeAll(async () => {
    rb = createRolebox({
      functions: FUNCTIONS,
      clock: new SimulatedClock(1_000),
      ids: seededIdSource(5),
      dispatcher: new ScriptedDispatcher((input) =>
        input.round === 1 ? undefined : `round ${input.round}`,
      ),
      store: new MemorySnapshotStore(),
    });
    await rb.start();
    // A session no sequence touches: whatever a sequence does, it stays as it was.
    bystander = await rb.openSession({ id: 'bystander' });
    bystander.activate('approval');
    bystander.setSlot('k', 'v');
  });
  afterAll(async () => {
    await rb.stop();
  });

  it('every call applies or throws a RoleboxError, and a refused one changes nothing', async () => {
    const errors: unknown[] = [];
    rb.on('error', (event) => errors.push(event.error));
    const bystanderView = JSON.stringify(bystander.view());
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(calls, fc.boolean()), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const session = await rb.openSession({ id: `fuzz-${sequence++}` });
          const persisted = () =>
            JSON.stringify(rb.system.system.get(`session:${session.id}`)?.getPersistedSnapshot());
          let closed = false;
          try {
            for (const [step, settleAfter] of steps) {
              const view = closed ? undefined : JSON.stringify(session.view());
              const snapshot = persisted();
              let thrown: unknown;
              try {
                step.run(session);
              } catch (error) {
                thrown = error;
              }
              if (thrown !== undefined) {
                if (!isRoleboxError(thrown))
                  throw new Error(
                    `${step.label} threw ${String((thrown as Error)?.stack ?? thrown)}`,
                  );
                // A closed session refuses everything (a hostile argument may be named first).
                if (closed)
                  expect(['unknown_session', 'invalid_argument'], step.label).toContain(
                    thrown.code,
                  );
                else expect(JSON.stringify(session.view()), step.label).toBe(view);
                expect(persisted(), step.label).toBe(snapshot);
              } else if (closed) {
                throw new Error(`${step.label} was applied to a closed session`);
              }
              if (step.label === 'close()') closed = true;
              if (settleAfter) await settle(1);
            }
            expect(rb.system.getSnapshot().status).toBe('active');
            expect(errors).toEqual([]);
            expect(JSON.stringify(bystander.view())).toBe(bystanderView);
          } finally {
            if (!closed) session.close();
          }
        },
      ),
      fuzzSettings(10_000),
    );
  });
});

describe('random option objects', () => {
  // createRolebox, createPipeline and CommandDispatcher given any options object: a good
  // one, a misspelt or prototype-named option, a value of any kind, a list of functions
  // with junk in it. Each either builds or throws a RoleboxError, never anything else.
  const anyValue = fc.anything({
    key: fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'toString', 'url', 'name'),
      fc.string({ maxLength: 6 }),
    ),
    maxDepth: 3,
    withBigInt: true,
    withDate: true,
    withMap: true,
    withNullPrototype: true,
    withSparseArray: true,
  });
  const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];
  const optionsFrom = (
    names: readonly string[],
    values: Readonly<Record<string, fc.Arbitrary<unknown>>>,
  ) =>
    fc.oneof(
      fc
        .array(
          fc.tuple(
            fc.oneof(
              { arbitrary: fc.constantFrom(...names), weight: 4 },
              { arbitrary: fc.constantFrom(...PROTOTYPE_NAMES), weight: 1 },
              { arbitrary: fc.string({ maxLength: 8 }), weight: 1 },
            ),
            fc.boolean(),
            anyValue,
          ),
          { maxLength: 5 },
        )
        .chain((entries) =>
          fc
            .tuple(
              ...entries.map(([name, good]) =>
                good && Object.hasOwn(values, name)
                  ? (values[name] as fc.Arbitrary<unknown>)
                  : anyValue,
              ),
            )
            .map((chosen) => {
              const options: Record<string, unknown> = {};
              entries.forEach(([name], index) => {
                // Own properties, `__proto__` included, as JSON.parse makes them.
                Object.defineProperty(options, name, {
                  value: chosen[index],
                  enumerable: true,
                  configurable: true,
                  writable: true,
                });
              });
              return options;
            }),
        ),
      { arbitrary: anyValue, weight: 1 },
    );
  const definitions = fc.array(
    fc.oneof(
      fc.constantFrom(...FUNCTIONS),
      fc.constantFrom(...FUNCTIONS).map((definition) => JSON.parse(JSON.stringify(definition))),
      fc
        .constantFrom(...FUNCTIONS)
        .chain((definition) =>
          fc
            .tuple(fc.constantFrom(...Object.keys(definition)), anyValue)
            .map(([key, value]) => ({ ...definition, [key]: value })),
        ),
      anyValue,
    ),
    { maxLength: 4 },
  );
  const wholeNumber = fc.oneof(
    fc.integer({ min: -1, max: 100_000 }),
    fc.constant(Number.POSITIVE_INFINITY),
  );
  const roleboxValues: Record<string, fc.Arbitrary<unknown>> = {
    functions: definitions,
    limits: optionsFrom(
      ['maxIterations', 'defaultIterations', 'maxToolBurst', 'continuationCooldowns'],
      {
        maxIterations: wholeNumber,
        defaultIterations: wholeNumber,
        maxToolBurst: wholeNumber,
        continuationCooldowns: fc.dictionary(
          fc.constantFrom('1', '3', 'x', '__proto__'),
          wholeNumber,
        ),
      },
    ),
    inspect: fc.constantFrom({ url: 'ws://127.0.0.1:1' }, { url: 'http://x' }, 'stately', () => {}),
    clock: fc.constant(new SimulatedClock(0)),
    ids: fc.constant(seededIdSource(1)),
    store: fc.constant(new MemorySnapshotStore()),
    strictSessions: fc.boolean(),
    journal: fc.boolean(),
    saveDebounceMs: wholeNumber,
    idleMs: wholeNumber,
    maxLiveSessions: wholeNumber,
    shards: wholeNumber,
    leaseMs: wholeNumber,
  };

  /** Runs `build`; passes when it returns or throws a RoleboxError. */
  const buildsOrRefuses = (label: string, build: () => unknown) => {
    try {
      build();
    } catch (error) {
      if (!isRoleboxError(error))
        throw new Error(`${label} threw ${String((error as Error)?.stack ?? error)}`);
    }
  };

  it('createRolebox builds or throws a RoleboxError', () => {
    fc.assert(
      fc.property(optionsFrom(ROLEBOX_OPTION_NAMES, roleboxValues), (options) => {
        buildsOrRefuses('createRolebox', () => createRolebox(options as never));
      }),
      fuzzSettings(2_000),
    );
  });

  it('createPipeline and CommandDispatcher build or throw a RoleboxError', () => {
    const pipelineNames = [
      'policies',
      'store',
      'sourceEvents',
      'guards',
      'clock',
      'ids',
      'limits',
      'telemetry',
      'onError',
    ];
    const dispatcherNames = [
      'command',
      'stateDir',
      'cwd',
      'env',
      'clock',
      'ids',
      'killGraceMs',
      'orphanCheckMs',
      'maxOutputBytes',
      'onDispatchPoint',
    ];
    fc.assert(
      fc.property(
        optionsFrom(pipelineNames, {
          limits: optionsFrom(['maxSteps', 'runHistory'], {
            maxSteps: wholeNumber,
            runHistory: wholeNumber,
          }),
          telemetry: optionsFrom(['meterProvider', 'tracerProvider'], {}),
          clock: fc.constant(new SimulatedClock(0)),
          policies: fc.constant([]),
        }),
        optionsFrom(dispatcherNames, {
          command: fc.constantFrom('cat', ' ', ''),
          stateDir: fc.constantFrom('/tmp/rolebox-fuzz-unused', ''),
          env: fc.dictionary(
            fc.string({ maxLength: 3 }),
            fc.oneof(fc.string({ maxLength: 3 }), anyValue),
          ),
          killGraceMs: wholeNumber,
          maxOutputBytes: wholeNumber,
        }),
        (pipelineOptions, dispatcherOptions) => {
          buildsOrRefuses('createPipeline', () => createPipeline(pipelineOptions as never));
          // Building a dispatcher touches no file and starts no process.
          buildsOrRefuses(
            'CommandDispatcher',
            () => new CommandDispatcher(dispatcherOptions as never),
          );
        },
      ),
      fuzzSettings(2_000),
    );
  });
});
