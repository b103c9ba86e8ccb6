// One source per shape: where a zod schema and a TypeScript type describe the same value,
// or a factory must produce a given machine, the types are tied here. The checks are types
// (`npm run typecheck`); each `// @ts-expect-error` shows that a wrong shape is caught.

import { describe, expect, it } from 'vitest';
import type { Snapshot } from 'xstate';
import { z } from 'zod';
import { createFunctionMachine, type FunctionMachine } from '../machines/function.machine.js';
import { createLoopMachine, type LoopMachine } from '../machines/loop.machine.js';
import type { MachineFactories } from '../machines/system.machine.js';
import { type FunctionSpec, functionSpecSchema } from '../src/function/definition.js';
import type { FunctionContext } from '../src/function/machine-types.js';
import type { LoopContext } from '../src/loop/machine-types.js';
import type { LoopState } from '../src/loop/types.js';
import type { SnapshotEnvelope, snapshotEnvelopeSchema } from '../src/persistence/envelope.js';
import type { JournalEntry, RecordedRun, recordedRunSchema } from '../src/persistence/journal.js';
import type { SystemRecord } from '../src/persistence/restore.js';
import type {
  artifactStoreSnapshotSchema,
  functionContextSchema,
  loopContextSchema,
  loopStateSchema,
  persistedMachineSchema,
  sessionContextSchema,
  systemRecordSchema,
} from '../src/persistence/snapshot-schemas.js';
import type { PipelineSource } from '../src/pipeline/nodes.js';
import type {
  PendingEvent,
  pendingEventRecordSchema,
  storedSourceSchema,
} from '../src/pipeline/pending-events.js';
import type { ArtifactStoreContext } from '../src/session/artifact-store.js';
import type { SessionContext } from '../src/session/machine-types.js';
import {
  type mainAgentDecisionSchema,
  RUNTIME_EVENT_SCHEMAS,
  RUNTIME_EVENT_TYPES,
  type skillIndexEntrySchema,
} from '../src/session/runtime-event-schema.js';
import type {
  MainAgentDecision,
  RuntimeEvent,
  RuntimeEventType,
  SkillIndexEntry,
} from '../src/session/runtime-types.js';
import type { SignalArgs, signalArgsSchema } from '../src/signal/schema.js';
import type { Equal, Expect, SameShape } from './support/type-equality.js';

describe('the type helpers', () => {
  it('tell equal types from merely assignable ones', () => {
    type Checks = [
      Expect<Equal<{ a: string }, { a: string }>>,
      // @ts-expect-error a literal is not string
      Expect<Equal<{ a: 'x' }, { a: string }>>,
      // @ts-expect-error an optional field is not a required one
      Expect<Equal<{ a?: string }, { a: string }>>,
      // @ts-expect-error readonly differs for Equal
      Expect<Equal<{ readonly a: string }, { a: string }>>,
      Expect<SameShape<{ readonly a: readonly { readonly b: number }[] }, { a: { b: number }[] }>>,
      // @ts-expect-error SameShape still sees a missing field
      Expect<SameShape<{ readonly a: string }, { a: string; b: number }>>,
    ];
    expect<Checks['length']>(6).toBe(6);
  });
});

describe('MachineFactories', () => {
  it('takes factories of the right machine, and refuses a factory of another', () => {
    const factories: MachineFactories = {
      function: (env) => createFunctionMachine(env),
      loop: (env) => createLoopMachine(env).provide({}),
    };
    type Checks = [
      Expect<Equal<ReturnType<NonNullable<MachineFactories['function']>>, FunctionMachine>>,
      Expect<Equal<ReturnType<NonNullable<MachineFactories['loop']>>, LoopMachine>>,
    ];
    // @ts-expect-error a loop factory must build a loop machine
    const wrong: MachineFactories = { loop: createFunctionMachine };
    expect(Object.keys({ ...factories, ...wrong }).sort()).toEqual(['function', 'loop']);
    expect<Checks['length']>(2).toBe(2);
  });
});

/** The runtime event types whose schema does not infer exactly their variant of RuntimeEvent. */
type EventMismatches<Schemas extends Record<RuntimeEventType, z.ZodType>> = {
  [K in RuntimeEventType]: SameShape<
    z.infer<Schemas[K]>,
    Extract<RuntimeEvent, { type: K }>
  > extends true
    ? never
    : K;
}[RuntimeEventType];

describe('runtime events: RUNTIME_EVENT_SCHEMAS and RuntimeEvent', () => {
  it('have one schema per event type, and each schema infers exactly its variant', () => {
    type Checks = [
      Expect<Equal<keyof typeof RUNTIME_EVENT_SCHEMAS, RuntimeEventType>>,
      Expect<Equal<EventMismatches<typeof RUNTIME_EVENT_SCHEMAS>, never>>,
      Expect<SameShape<z.infer<typeof mainAgentDecisionSchema>, MainAgentDecision>>,
      Expect<SameShape<z.infer<typeof skillIndexEntrySchema>, SkillIndexEntry>>,
      // @ts-expect-error a schema with an optional field where the variant has none
      Expect<Equal<EventMismatches<typeof wrongEventSchemas>, never>>,
    ];
    const wrongEventSchemas = {
      ...RUNTIME_EVENT_SCHEMAS,
      flow_completed: RUNTIME_EVENT_SCHEMAS.flow_completed.extend({ note: z.string().optional() }),
    };
    expect(RUNTIME_EVENT_TYPES).toEqual(Object.keys(RUNTIME_EVENT_SCHEMAS));
    expect<Checks['length']>(5).toBe(5);
  });
});

describe('signals and function definitions', () => {
  it('signalArgsSchema infers SignalArgs; functionSpecSchema takes FunctionSpec as input', () => {
    // The spec schema transforms (a single name becomes a list), so its *input* is the spec as written.
    const conditionsUntyped = functionSpecSchema.extend({ gate: z.unknown().optional() });
    type Checks = [
      Expect<SameShape<z.infer<typeof signalArgsSchema>, SignalArgs>>,
      Expect<SameShape<z.input<typeof functionSpecSchema>, FunctionSpec>>,
      // @ts-expect-error a condition typed unknown is not a Condition
      Expect<SameShape<z.input<typeof conditionsUntyped>, FunctionSpec>>,
    ];
    expect(functionSpecSchema.safeParse({ name: 'x', gate: { all: [] } }).success).toBe(true);
    expect<Checks['length']>(3).toBe(3);
  });
});

describe('stored snapshots: the zod objects of check-snapshot and the context interfaces', () => {
  it('infer exactly SessionContext, FunctionContext, LoopContext, LoopState and the rest', () => {
    type LoopStateWithAnyMode = Omit<LoopState, 'mode'> & { mode: string };
    type Checks = [
      Expect<SameShape<z.infer<typeof sessionContextSchema>, SessionContext>>,
      Expect<SameShape<z.infer<typeof functionContextSchema>, FunctionContext>>,
      Expect<SameShape<z.infer<typeof loopContextSchema>, LoopContext>>,
      Expect<SameShape<z.infer<typeof loopStateSchema>, LoopState>>,
      Expect<
        SameShape<z.infer<typeof artifactStoreSnapshotSchema>['context'], ArtifactStoreContext>
      >,
      Expect<
        SameShape<
          z.infer<typeof systemRecordSchema>['context']['loopRegistry'],
          SystemRecord['context']['loopRegistry']
        >
      >,
      Expect<Equal<z.infer<typeof persistedMachineSchema>['status'], Snapshot<unknown>['status']>>,
      // @ts-expect-error a field missing from the interface
      Expect<SameShape<z.infer<typeof sessionContextSchema>, Omit<SessionContext, 'turn'>>>,
      // @ts-expect-error a field of another type
      Expect<SameShape<z.infer<typeof loopStateSchema>, LoopStateWithAnyMode>>,
    ];
    expect<Checks['length']>(9).toBe(9);
  });
});

describe('envelopes, recorded runs and stored pipeline events', () => {
  it('check the fields their types declare', () => {
    type Envelope = z.infer<typeof snapshotEnvelopeSchema>;
    type Run = z.infer<typeof recordedRunSchema>;
    type StoredEvent = z.infer<typeof pendingEventRecordSchema>;
    type StoredSource = z.infer<typeof storedSourceSchema>;
    type Checks = [
      // The envelope checks that the snapshot is an object; what is in it, check-snapshot checks.
      Expect<
        SameShape<
          Envelope,
          Omit<SnapshotEnvelope, 'snapshot'> & { snapshot: Record<string, unknown> }
        >
      >,
      // A run file is checked one level deep: every field, exactly the scalar ones.
      Expect<Equal<keyof Run, keyof RecordedRun>>,
      Expect<Equal<keyof Run['journal'][number], keyof JournalEntry>>,
      Expect<
        SameShape<
          Pick<Run, 'format' | 'version' | 'machineVersions'>,
          Pick<RecordedRun, 'format' | 'version' | 'machineVersions'>
        >
      >,
      // A stored pipeline event: the record around the event, the source one level deep.
      Expect<Equal<keyof StoredEvent, keyof PendingEvent | 'format' | 'version'>>,
      Expect<
        SameShape<Omit<StoredEvent, 'format' | 'version' | 'source'>, Omit<PendingEvent, 'source'>>
      >,
      Expect<Equal<keyof StoredSource, keyof PipelineSource>>,
      Expect<
        SameShape<
          Pick<StoredSource, 'sourceId' | 'sourceType' | 'scopeKey' | 'timestamp'>,
          Pick<PipelineSource, 'sourceId' | 'sourceType' | 'scopeKey' | 'timestamp'>
        >
      >,
      // @ts-expect-error a field the schema does not check
      Expect<Equal<keyof StoredSource, keyof PipelineSource | 'parentRunId'>>,
    ];
    expect<Checks['length']>(9).toBe(9);
  });
});
