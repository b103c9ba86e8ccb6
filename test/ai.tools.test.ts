// rolebox/ai's plain tools: the definitions an SDK is given (generated from the catalogues)
// and callTool, which runs a model's call on a session and answers the reply text.
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOOL_NAMES,
  callTool,
  ROLEBOX_TOOL_NAMES,
  toolDefinitions,
  toolErrorText,
} from '../src/ai/index.js';
import { type Rolebox, RoleboxError, RUNTIME_EVENT_TYPES, SIGNAL_TYPES } from '../src/index.js';
import { ScriptedDispatcher, settle } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { phaseOf, startWith } from './support/rolebox.js';
import { withId } from './support/sessions.js';

let rb: Rolebox | undefined;
afterEach(async () => {
  await rb?.stop();
  rb = undefined;
});

const approval = {
  name: 'approval',
  gate: 'user_approval()',
  continue_until: 'signal_observed(answer)',
  observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
};

async function session(options: Parameters<typeof startWith>[1] = {}) {
  const started = await startWith([approval], options);
  rb = started.rb;
  return started.session;
}

type Schema = {
  properties: Record<string, Schema & { enum?: string[]; oneOf?: Schema[] }>;
  required?: string[];
  additionalProperties?: unknown;
};

describe('toolDefinitions', () => {
  it("lists the agent's tools in MCP's neutral shape, with the signal types of the catalogue", () => {
    const definitions = toolDefinitions();
    expect(definitions.map((tool) => tool.name)).toEqual([...AGENT_TOOL_NAMES]);
    const signal = definitions[0]!;
    const schema = signal.inputSchema as unknown as Schema;
    expect(schema.properties.type?.enum).toEqual([...SIGNAL_TYPES]);
    expect(schema.required).toEqual(['type']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.payload).toMatchObject({ type: 'object' });
    // No dialect marker and no propertyNames: some function-calling APIs refuse them.
    expect(JSON.stringify(definitions)).not.toMatch(/\$schema|propertyNames/);
    // Every type's meaning is in the schema the model reads.
    for (const type of SIGNAL_TYPES)
      expect(schema.properties.type as unknown as { description: string }).toMatchObject({
        description: expect.stringContaining(`${type} (`),
      });
  });

  it('answers in OpenAI and Anthropic shapes, and for the tools asked for', () => {
    const [neutral] = toolDefinitions({ tools: ['start_loop'] });
    expect(toolDefinitions({ format: 'openai', tools: ['start_loop'] })).toEqual([
      {
        type: 'function',
        function: {
          name: 'start_loop',
          description: neutral!.description,
          parameters: neutral!.inputSchema,
        },
      },
    ]);
    expect(toolDefinitions({ format: 'anthropic', tools: ['start_loop'] })).toEqual([
      { name: 'start_loop', description: neutral!.description, input_schema: neutral!.inputSchema },
    ]);
    const all = toolDefinitions({ tools: ROLEBOX_TOOL_NAMES });
    expect(all.map((tool) => tool.name)).toEqual([
      'signal',
      'start_loop',
      'stop_loop',
      'session_view',
      'send_event',
    ]);
    // send_event takes every runtime event of the catalogue, and the host's own events.
    const event = (all[4]!.inputSchema as unknown as Schema).properties.event!;
    const types = event.oneOf!.map(
      (variant) => (variant.properties.type as unknown as { const: string }).const,
    );
    expect(types).toEqual(
      expect.arrayContaining([...RUNTIME_EVENT_TYPES, 'user_message', 'idle', 'activate_function']),
    );
  });

  it('answers copies: changing one changes nothing for the next caller', () => {
    const first = toolDefinitions();
    (first[0]!.inputSchema as Record<string, unknown>).type = 'string';
    expect(toolDefinitions()[0]!.inputSchema.type).toBe('object');
  });

  it('refuses an unknown format or tool, naming it', () => {
    expect(errorOf(() => toolDefinitions({ format: 'gemini' as never }))).toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining('"gemini"'),
    });
    expect(errorOf(() => toolDefinitions({ tools: ['signal', 'shell'] as never }))).toMatchObject({
      code: 'invalid_argument',
      message:
        'unknown tool "shell"; expected one of signal, start_loop, stop_loop, session_view, send_event',
    });
    expect(errorOf(() => toolDefinitions(null as never)).code).toBe('invalid_argument');
  });
});

describe('callTool', () => {
  it('runs a signal and answers its receipt text, from an object or from JSON text', async () => {
    const s = await session();
    s.activate('approval');
    expect(callTool(s, 'signal', { type: 'need_approval', payload: { reason: 'prod' } })).toBe(
      'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
    );
    expect(callTool(s, 'signal', '{"type":"progress"}')).toBe(
      'signal: progress acknowledged | recorded on 1 function(s) | → informational (no state transition)',
    );
    expect(s.view().functions[0]?.signals).toMatchObject({
      need_approval: { reason: 'prod' },
      progress: null,
    });
  });

  it('refuses bad input with the code the session gives, naming the value, and changes nothing', async () => {
    const s = await session();
    s.activate('approval');
    const before = JSON.stringify(s.view());
    const cases: [string, unknown, string, string][] = [
      ['signal', { type: 'approve' }, 'unknown_signal_type', '"approve"'],
      ['signal', { type: 'answer', payload: [1] }, 'invalid_signal_payload', '[1]'],
      ['signal', { type: 'answer', why: 'x' }, 'invalid_argument', '"why"'],
      ['signal', '{"type": ', 'invalid_argument', '"{\\"type\\": "'],
      ['signal', 42, 'invalid_argument', '42'],
      ['start_loop', { task: 'x', iterations: 0 }, 'invalid_argument', 'iterations'],
      ['start_loop', { task: 'x', mode: 'forever' }, 'invalid_argument', '"forever"'],
      ['start_loop', { iterations: 2 }, 'invalid_argument', 'task'],
      ['stop_loop', { now: 'yes' }, 'invalid_argument', '"yes"'],
      ['stop_loop', {}, 'no_active_loop', 'S1'],
      ['session_view', { verbose: true }, 'invalid_argument', '"verbose"'],
      ['send_event', { event: { type: 'teleport' } }, 'invalid_event', '"teleport"'],
      ['send_event', { event: { type: 'flow_completed' } }, 'event_not_allowed', 'flow_completed'],
      ['send_event', { event: { type: 'user_message' } }, 'invalid_event', 'text'],
      [
        'send_event',
        { event: { type: 'activate_function', name: 'ghost' } },
        'unknown_function',
        '"ghost"',
      ],
      [
        'send_event',
        { event: { type: 'resume_function', name: 'approval' } },
        'gate_closed',
        'user_approval()',
      ],
      ['send_event', {}, 'invalid_argument', 'event'],
      ['shell', {}, 'invalid_argument', '"shell"'],
      ['__proto__', {}, 'invalid_argument', '"__proto__"'],
    ];
    for (const [tool, input, code, named] of cases) {
      const error = errorOf(() => callTool(s, tool, input));
      expect({ tool, input, code: error.code }).toEqual({ tool, input, code });
      expect(error.message, `${tool} ${JSON.stringify(input)}`).toContain(named);
    }
    expect(JSON.stringify(s.view())).toBe(before);
    expect(
      errorOf(() => callTool({ id: 'S1' } as never, 'signal', { type: 'answer' })),
    ).toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining('session handle'),
    });
  });

  it('drives an approval through send_event: a user message opens the gate, idle completes', async () => {
    const s = await session();
    expect(
      JSON.parse(
        callTool(s, 'send_event', { event: { type: 'activate_function', name: 'approval' } }),
      ),
    ).toEqual({
      function: 'approval',
      phase: 'gated',
      status: 'live',
    });
    callTool(s, 'signal', { type: 'need_approval', payload: { reason: 'prod' } });
    expect(
      JSON.parse(callTool(s, 'send_event', { event: { type: 'user_message', text: 'ok' } })),
    ).toEqual({
      loopStopped: false,
    });
    expect(phaseOf(s, 'approval')).toBe('active');
    callTool(s, 'signal', { type: 'answer' });
    expect(JSON.parse(callTool(s, 'send_event', { event: { type: 'idle' } }))).toMatchObject({
      completed: ['approval'],
    });
    expect(phaseOf(s, 'approval')).toBe('complete(completed)');
  });

  it('sends runtime events and answers the phase, the waiting reason and the effects', async () => {
    const s = await session();
    callTool(s, 'send_event', {
      event: {
        type: 'session_started',
        availableSkills: [{ name: 'write' }],
        initialSkill: 'write',
      },
    });
    const answer = JSON.parse(
      callTool(s, 'send_event', { event: { type: 'user_submitted_input', text: 'a haiku' } }),
    );
    expect(answer).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'invoke_main_agent', reason: 'user_submitted_input' })],
    });
  });

  it('serves only facts: the view leaves out the content of artifacts that are not accepted', async () => {
    const s = await session();
    const draft = s.artifacts.write({ name: 'draft', content: 'not yet', summary: 'wip' });
    const done = s.artifacts.write({ name: 'final', content: 'the answer' });
    s.artifacts.setStatus(done.id, 'under_review');
    s.artifacts.setStatus(done.id, 'accepted');
    const view = JSON.parse(callTool(s, 'session_view', {}));
    expect(view.artifacts).toEqual([
      {
        id: draft.id,
        name: 'draft',
        status: 'drafted',
        createdAt: draft.createdAt,
        updatedAt: draft.updatedAt,
      },
      expect.objectContaining({ id: done.id, status: 'accepted', content: 'the answer' }),
    ]);
    // The session's own view is untouched.
    expect(s.view().artifacts[0]).toMatchObject({ content: 'not yet', summary: 'wip' });
    expect(callTool(s, 'session_view', undefined)).toBe(callTool(s, 'session_view', ''));
  });

  it('starts and stops loops; a second loop is refused in the reply, not thrown', async () => {
    const s = await session({
      dispatcher: new ScriptedDispatcher(() => undefined),
      limits: { interRoundDelayMs: 0 },
    });
    const started = callTool(s, 'start_loop', { task: 'summarise', iterations: 2, mode: 'fresh' });
    expect(started).toMatch(/^loop started: loop_\w+$/);
    const loop = s.view().loop;
    expect(loop).toMatchObject({
      id: started.slice('loop started: '.length),
      total: 2,
      mode: 'fresh',
    });
    expect(callTool(s, 'start_loop', { task: 'again' })).toMatch(/^loop refused: /);
    await settle(1);
    expect(callTool(s, 'stop_loop', { now: true })).toBe(`loop ${loop?.id}: cancelled now`);
    await settle(1);
    expect(s.view().loop?.phase).toBe('cancelled');
  });

  it('refuses start_loop on a rolebox without a dispatcher (no_dispatcher)', async () => {
    const s = await session();
    expect(errorOf(() => callTool(s, 'start_loop', { task: 'x' })).code).toBe('no_dispatcher');
  });
});

describe('toolErrorText', () => {
  it('names the code of a RoleboxError, and says error for anything else', () => {
    expect(
      toolErrorText(new RoleboxError('no_active_loop', 'session S1 has no running loop')),
    ).toBe('refused (no_active_loop): session S1 has no running loop');
    expect(toolErrorText(new Error('boom'))).toBe('error: boom');
    expect(toolErrorText('odd')).toBe('error: "odd"');
  });
});
