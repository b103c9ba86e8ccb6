// callTool under random tool calls, the way models make them: JSON (sometimes as text),
// good and bad, with prototype keys and odd values. Every call answers a text or throws a
// RoleboxError that changed nothing; and an input the tool's own schema accepts (what an
// SDK lets through) is never refused as malformed. ROLEBOX_FUZZ_RUNS sets the sequences.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callTool, ROLEBOX_TOOL_NAMES, type RoleboxToolName } from '../src/ai/index.js';
import { toolSpec } from '../src/ai/tools.js';
import { describeValue } from '../src/errors.js';
import {
  createRolebox,
  defineFunction,
  isRoleboxError,
  MemorySnapshotStore,
  type Rolebox,
  RUNTIME_EVENT_TYPES,
  SIGNAL_TYPES,
} from '../src/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { fuzzSettings } from './support/fuzz.js';

vi.setConfig({ testTimeout: 120_000 });

/** The codes a malformed call is refused with: never for an input the schema accepts. */
const MALFORMED = new Set(['invalid_argument', 'invalid_event', 'unknown_signal_type']);

const json = fc.jsonValue({ maxDepth: 3 });
const oddKey = fc.constantFrom('__proto__', 'constructor', 'toString', 'type', '');
const key = fc.oneof(fc.string({ maxLength: 6 }), oddKey);
const oddValue = fc.oneof(
  json,
  fc.constantFrom(undefined, null, Number.NaN, () => 1, Symbol('s'), 10n),
  fc.date(),
  fc.constant(new Map([['type', 'answer']])),
  fc.constant(Object.create(null)),
);
const extra = fc.dictionary(key, json, { maxKeys: 2 });
const withExtra = (base: fc.Arbitrary<Record<string, unknown>>) =>
  fc.oneof(
    { weight: 4, arbitrary: base },
    fc.tuple(base, extra).map(([value, more]) => ({ ...more, ...value })),
  );

const signal = withExtra(
  fc.record(
    {
      type: fc.oneof(fc.constantFrom(...SIGNAL_TYPES), fc.constantFrom('approve', '__proto__')),
      payload: fc.oneof(fc.dictionary(key, json, { maxKeys: 3 }), oddValue),
    },
    { requiredKeys: [] },
  ),
);
const startLoop = withExtra(
  fc.record(
    {
      task: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('draft the notes', ' ', '|x|')),
      iterations: fc.oneof(fc.integer({ min: -2, max: 60 }), fc.double(), fc.string()),
      mode: fc.constantFrom('inherit', 'fresh', 'on', 'constructor'),
    },
    { requiredKeys: [] },
  ),
);
const stopLoop = withExtra(
  fc.record({ now: fc.oneof(fc.boolean(), oddValue) }, { requiredKeys: [] }),
);
const functionName = fc.constantFrom('approval', 'ghost', '__proto__', '');
const event = fc.oneof(
  fc.constantFrom(
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'go' },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'w1', requiresApproval: true },
    },
    { type: 'user_approved_next_step', decisionId: 'd1' },
    { type: 'worker_started', workerId: 'w1', acceptanceMode: 'user_confirmed' },
    { type: 'worker_completed', artifactId: 'art-1' },
    { type: 'user_accepted_artifact', artifactId: 'art-1' },
    { type: 'flow_completed' },
    { type: 'idle' },
    { type: 'user_message', text: 'approved' },
    { type: 'user_message', text: '/stop-loop' },
  ),
  functionName.chain((name) =>
    fc
      .constantFrom('activate_function', 'deactivate_function', 'resume_function')
      .map((type) => ({ type, name })),
  ),
  withExtra(
    fc.record(
      {
        type: fc.constantFrom(
          ...RUNTIME_EVENT_TYPES,
          'idle',
          'user_message',
          'activate_function',
          'constructor',
          '__proto__',
        ),
        text: fc.oneof(fc.string({ maxLength: 4 }), oddValue),
        name: functionName,
        decisionId: fc.constantFrom('d1', ''),
      },
      { requiredKeys: ['type'] },
    ),
  ),
  oddValue,
);
const sendEvent = withExtra(fc.record({ event }, { requiredKeys: [] }));

/** The input as the JSON text an SDK hands over (what JSON cannot say is left out, as JSON does). */
function jsonText(input: unknown): string {
  try {
    return JSON.stringify(input) ?? '';
  } catch {
    return '{';
  }
}

const inputs: Record<RoleboxToolName, fc.Arbitrary<unknown>> = {
  signal,
  start_loop: startLoop,
  stop_loop: stopLoop,
  session_view: fc.oneof(fc.constant({}), extra),
  send_event: sendEvent,
};

/** One call: a tool name (mostly real ones) and its input (sometimes as JSON text, sometimes anything). */
const toolCall = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .constantFrom(...ROLEBOX_TOOL_NAMES)
      .chain((name) =>
        fc
          .oneof(
            { weight: 4, arbitrary: inputs[name] },
            { weight: 1, arbitrary: inputs[name].map(jsonText) },
            { weight: 1, arbitrary: oddValue },
            { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
          )
          .map((input) => ({ name: name as string, input })),
      ),
  },
  fc.record({
    name: fc.oneof(fc.string({ maxLength: 8 }), oddKey, fc.constant('signal ')),
    input: oddValue,
  }),
);

describe('callTool under random tool calls', () => {
  let rb: Rolebox;
  let sequence = 0;
  beforeAll(async () => {
    rb = createRolebox({
      functions: [
        defineFunction({
          name: 'approval',
          gate: 'user_approval()',
          continue_until: 'signal_observed(answer)',
          observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
        }),
      ],
      clock: new SimulatedClock(1_000),
      ids: seededIdSource(11),
      dispatcher: new ScriptedDispatcher((input) => `round ${input.round}`),
      limits: { interRoundDelayMs: 0 },
      store: new MemorySnapshotStore(),
    });
    await rb.start();
  });
  afterAll(async () => {
    await rb.stop();
  });

  it('answers a text or throws a RoleboxError that changed nothing; what the schema accepts is never malformed', async () => {
    const errors: unknown[] = [];
    rb.on('error', (event) => errors.push(event.error));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(toolCall, fc.boolean()), { minLength: 1, maxLength: 8 }),
        async (calls) => {
          const session = await rb.openSession({ id: `tools-${sequence++}` });
          const persisted = () =>
            JSON.stringify(rb.system.system.get(`session:${session.id}`)?.getPersistedSnapshot());
          try {
            for (const [{ name, input }, settleAfter] of calls) {
              const label = `${name}(${describeValue(input)})`;
              const view = JSON.stringify(session.view());
              const snapshot = persisted();
              let answer: unknown;
              let thrown: unknown;
              try {
                answer = callTool(session, name, input);
              } catch (error) {
                thrown = error;
              }
              if (thrown === undefined) {
                expect(typeof answer, label).toBe('string');
              } else {
                if (!isRoleboxError(thrown))
                  throw new Error(`${label} threw ${String((thrown as Error)?.stack ?? thrown)}`);
                expect(JSON.stringify(session.view()), label).toBe(view);
                expect(persisted(), label).toBe(snapshot);
                const known = (ROLEBOX_TOOL_NAMES as readonly string[]).includes(name);
                if (known && MALFORMED.has(thrown.code)) {
                  const accepted = toolSpec(name as RoleboxToolName).input.safeParse(input).success;
                  expect(accepted, `${label}: ${thrown.code} ${thrown.message}`).toBe(false);
                }
              }
              if (settleAfter) await settle(1);
            }
            expect(errors).toEqual([]);
          } finally {
            session.close();
          }
        },
      ),
      fuzzSettings(3_000),
    );
  });
});
