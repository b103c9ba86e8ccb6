import { describe, expect, it } from 'vitest';
import { checkFunctionSpec, MemorySnapshotStore } from '../src/index.js';
import { parseLoopCommand } from '../src/loop/parse-loop-command.js';
import { emptyLoopRegistry, finishLoop } from '../src/loop/registry.js';
import { definePolicy, defineSourceHandler, telemetryRecordOf } from '../src/pipeline/index.js';
import { canChangeArtifactStatus } from '../src/session/artifact-lifecycle.js';
import { parseRuntimeEvent } from '../src/session/runtime-event-schema.js';
import { hasSignal, readLedgerRecord, recordSignal } from '../src/signal/ledger.js';
import { ScriptedDispatcher } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { boot } from './support/persistence.js';
import { asRun, testPipeline } from './support/pipeline.js';
import { startWith } from './support/rolebox.js';

// Text from outside (an agent's tool call, a host's key, a definition) must never be
// answered from Object.prototype, nor write into it. These are the names that would be.
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

/** Fails the test if anything wrote into Object.prototype, and undoes it. */
function expectPrototypeUntouched(name: string) {
  const polluted = Object.hasOwn(Object.prototype, name);
  if (polluted) delete (Object.prototype as Record<string, unknown>)[name];
  expect(polluted, `Object.prototype.${name} was written`).toBe(false);
}

describe('|loop| text', () => {
  it.each(PROTOTYPE_NAMES)('refuses mode %j with malformed_loop_text', (mode) => {
    const error = errorOf(() => parseLoopCommand(`|loop:2,${mode}| x`));
    expect(error.code).toBe('malformed_loop_text');
    expect(error.message).toContain(`got ${JSON.stringify(mode)}`);
  });

  it.each(PROTOTYPE_NAMES)('refuses parameter name %j with malformed_loop_text', (name) => {
    const error = errorOf(() => parseLoopCommand(`|loop:${name}=3| x`));
    expect(error.code).toBe('malformed_loop_text');
    expect(error.message).toContain(`unknown parameter ${JSON.stringify(name)}`);
  });

  it('a session refuses |loop:2,constructor| and its view still works', async () => {
    const { session } = await startWith([], { dispatcher: new ScriptedDispatcher() });
    expect(errorOf(() => session.startLoop('|loop:2,constructor| x')).code).toBe(
      'malformed_loop_text',
    );
    expect(session.view().loop).toBeNull();
  });
});

describe('runtime events', () => {
  it.each(PROTOTYPE_NAMES)('refuses type %j with invalid_event', async (type) => {
    expect(errorOf(() => parseRuntimeEvent({ type })).code).toBe('invalid_event');
    const { session } = await startWith([]);
    const error = errorOf(() => session.send({ type } as never));
    expect(error.code).toBe('invalid_event');
    expect(error.message).toContain(`unknown runtime event type ${JSON.stringify(type)}`);
  });
});

describe('keys the host writes', () => {
  it('a slot named __proto__ or constructor is stored as data, in the view and after a restart', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot({ store });
    const session = await first.rb.openSession({ id: 'S1' });
    session.setSlot('__proto__', { polluted: true });
    session.setSlot('constructor', 'slot');
    const slots = session.view().slots;
    expect(Object.keys(slots)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(slots)).toBe(Object.prototype);
    expect(JSON.stringify(slots)).toBe('{"__proto__":{"polluted":true},"constructor":"slot"}');
    await first.rb.stop();

    const second = await boot({ store });
    expect(second.report.failed).toEqual([]);
    expect(JSON.stringify(second.rb.session('S1').view().slots)).toBe(
      '{"__proto__":{"polluted":true},"constructor":"slot"}',
    );
    await second.rb.stop();
    expectPrototypeUntouched('polluted');
  });

  it('sessions named after prototype keys open, restore and close like any other', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot({ store });
    for (const id of ['__proto__', 'constructor', 'toString']) {
      const session = await first.rb.openSession({ id });
      session.activate('approval');
    }
    await first.rb.stop();
    const second = await boot({ store });
    expect(second.report.restored).toEqual(['__proto__', 'constructor', 'toString']);
    second.rb.session('constructor').close();
    expect(second.rb.sessions()).toEqual(['__proto__', 'toString']);
    await second.rb.stop();
  });
});

describe('keys a definition or a signal writes', () => {
  it('set_evidence: __proto__ is recorded as a tag, and evidence_observed(…) reads own tags only', async () => {
    const { session } = await startWith([
      {
        name: 'watcher',
        observe: [{ tool: 'write_file', set_evidence: '__proto__' }],
        continue_until: 'evidence_observed(__proto__)',
      },
      { name: 'misled', continue_until: 'evidence_observed(constructor)' },
      { name: 'requires', requires_evidence: ['constructor'], continue_until: 'evidence_met()' },
    ]);
    for (const name of ['watcher', 'misled', 'requires']) session.activate(name);
    session.observeTool('write_file');
    const watcher = session.view().functions.find((fn) => fn.name === 'watcher');
    expect(JSON.stringify(watcher?.evidence)).toBe('{"__proto__":true}');
    session.idle();
    expect(session.view().functions.map((fn) => [fn.name, fn.phase])).toEqual([
      ['misled', 'active'],
      ['requires', 'active'],
      ['watcher', 'complete'],
    ]);
  });

  it('the ledger keeps a type named __proto__ as its own entry', () => {
    const kv = recordSignal({}, '__proto__', { polluted: true });
    expect(hasSignal(kv, '__proto__')).toBe(true);
    expect(JSON.stringify(readLedgerRecord(kv))).toBe('{"__proto__":{"polluted":true}}');
    expect(hasSignal(kv, 'constructor')).toBe(false);
    const legacy = readLedgerRecord({ __signals_observed: ['__proto__'] });
    expect(Object.keys(legacy)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(legacy)).toBe(Object.prototype);
  });

  it('an unknown frontmatter key named __proto__ is kept and warned about like any other', () => {
    const checked = checkFunctionSpec(JSON.parse('{"name": "a", "__proto__": {"x": 1}}'));
    expect(JSON.stringify(checked.definition?.extra)).toBe('{"__proto__":{"x":1}}');
    expect(Object.getPrototypeOf(checked.definition?.extra)).toBe(Object.prototype);
    expect(checked.warnings).toEqual(['function a: unknown key "__proto__" is kept but ignored']);
  });
});

describe('tables keyed by a name', () => {
  it('pipeline limits: toString or __proto__ is an unknown limit', () => {
    for (const limits of [{ toString: 5 }, JSON.parse('{"__proto__": 5}')]) {
      const error = errorOf(() => testPipeline([], { limits }));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toMatch(
        /^createPipeline limits: unknown limit "(toString|__proto__)"; known: maxSteps, /,
      );
    }
  });

  it('telemetry counts a type with a __proto__ domain as data, not into Object.prototype', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [defineSourceHandler('x.__proto__.polluted', 'x:noop', () => undefined)]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x.__proto__.polluted' }));
    const record = telemetryRecordOf(run);
    expectPrototypeUntouched('polluted');
    expect(JSON.stringify(record.domains)).toBe('{"__proto__":{"polluted":1}}');
  });

  it('artifact status and loop registry lookups ignore prototype names', () => {
    expect(canChangeArtifactStatus('constructor' as never, 'accepted')).toBe(false);
    const registry = emptyLoopRegistry();
    expect(finishLoop(registry, 'constructor')).toBe(registry);
    expect(finishLoop(registry, '__proto__')).toBe(registry);
  });
});
