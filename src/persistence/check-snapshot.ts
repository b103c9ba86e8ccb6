import type { AnyStateMachine } from 'xstate';
import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import type { FunctionCatalog } from '../function/catalog.js';

/** The machines a stored session subtree is checked against. */
export interface SnapshotMachines {
  readonly session: AnyStateMachine;
  readonly function: AnyStateMachine;
  readonly loop: AnyStateMachine;
}

const json = z.record(z.string(), z.unknown());
const stringArray = z.array(z.string());
const persistedChild = z.object({
  src: z.string(),
  snapshot: json,
  systemId: z.string().optional(),
});
const persistedMachine = z.object({
  status: z.enum(['active', 'done', 'error', 'stopped']),
  value: z.union([z.string(), json]),
  context: json,
  children: z.record(z.string(), persistedChild),
});

const sessionContext = z.object({
  sessionId: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  turn: z.number(),
  userMessageInTurn: z.boolean(),
  liveFunctions: stringArray,
  retiredFunctions: json,
  continuations: z.number(),
  idleCycle: z.number(),
  activeLoopId: z.string().nullable(),
  waitingReason: json.nullable(),
  currentWorkerId: z.string().nullable(),
  acceptanceMode: z.enum(['user_confirmed', 'no_confirmation', 'programmatic_review']),
  slots: json,
  toolLoopBurstCount: z.number(),
  history: z.array(z.object({ at: z.number(), event: z.object({ type: z.string() }) })),
});
const functionContext = z.object({
  sessionId: z.string(),
  name: z.string(),
  kv: json,
  evidenceObserved: json,
  toolsObserved: stringArray,
  activatedAtTurn: z.number(),
  facts: z.object({ turn: z.number(), userMessageInTurn: z.boolean(), artifacts: stringArray }),
  continuations: z.number(),
  cooldownUntilTurn: z.number(),
  transitionsHeld: z.array(z.boolean()),
});
const loopContext = z.object({
  schemaVersion: z.number(),
  id: z.string(),
  originSessionId: z.string(),
  basePrompt: z.string(),
  mode: z.enum(['inherit', 'fresh']),
  total: z.number(),
  current: z.number(),
  cancelRequested: z.boolean(),
  promptFingerprint: z.string(),
  rounds: z.array(
    z.object({
      round: z.number(),
      workerTaskId: z.string(),
      workerSessionId: z.string(),
      startedAt: z.number(),
      status: z.string(),
      output: z
        .object({ bytes: z.number(), keptBytes: z.number(), truncated: z.boolean() })
        .optional(),
    }),
  ),
});
const artifactStore = z.object({
  status: z.literal('active'),
  context: z.object({
    nextSeq: z.number(),
    artifacts: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        status: z.string(),
        createdAt: z.number(),
        updatedAt: z.number(),
      }),
    ),
  }),
});

/** The actor logics a loop invokes (its persisted children may name them). */
const LOOP_INVOKED = new Set([
  'prepareLoop',
  'dispatchRound',
  'awaitWorker',
  'deadlineTimer',
  'collectResult',
  'cancelWorker',
]);

/**
 * Checks that a stored session subtree can be restored by these machines: its shape, its
 * contexts, every state value (session, functions, loop), every child's kind, and that
 * every function it holds is still defined. A snapshot that passes is handed to XState;
 * one that fails never is (XState reports restore errors asynchronously, and an
 * unobserved one ends the process).
 *
 * Throws: `invalid_snapshot` naming the session, the part and what is wrong.
 */
export function checkSessionSnapshot(
  sessionId: string,
  snapshot: unknown,
  machines: SnapshotMachines,
  catalog: FunctionCatalog,
): void {
  const fail = (where: string, why: string): never => {
    throw new RoleboxError(
      'invalid_snapshot',
      `stored session ${describeValue(sessionId)} cannot be restored: ${where}: ${why}`,
      {
        sessionId,
        where,
      },
    );
  };
  const shaped = (schema: z.ZodType, value: unknown, where: string) => {
    const result = schema.safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0] as z.core.$ZodIssue;
      fail(where, `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`);
    }
  };
  const stateValue = (
    machine: AnyStateMachine,
    value: unknown,
    context: unknown,
    where: string,
  ) => {
    try {
      machine.resolveState({ value: value as never, context: context as never });
    } catch (error) {
      fail(where, `unknown state ${describeValue(value)} (${(error as Error).message})`);
    }
  };

  shaped(persistedMachine, snapshot, 'session');
  const session = snapshot as z.infer<typeof persistedMachine>;
  shaped(sessionContext, session.context, 'session context');
  if (session.context.sessionId !== sessionId)
    fail('session context', `it belongs to session ${describeValue(session.context.sessionId)}`);
  stateValue(machines.session, session.value, session.context, 'session');

  for (const [childId, child] of Object.entries(session.children)) {
    const where = `child ${childId}`;
    if (child.src === 'function') {
      shaped(persistedMachine, child.snapshot, where);
      shaped(functionContext, child.snapshot.context, `${where} context`);
      const name = (child.snapshot.context as { name: string }).name;
      if (!catalog.get(name))
        fail(where, `function ${describeValue(name)} is not defined any more`);
      stateValue(machines.function, child.snapshot.value, child.snapshot.context, where);
    } else if (child.src === 'loop') {
      shaped(persistedMachine, child.snapshot, where);
      shaped(loopContext, child.snapshot.context, `${where} context`);
      stateValue(machines.loop, child.snapshot.value, child.snapshot.context, where);
      for (const [invokedId, invoked] of Object.entries(
        (child.snapshot as z.infer<typeof persistedMachine>).children,
      )) {
        if (!LOOP_INVOKED.has(invoked.src))
          fail(`${where} child ${invokedId}`, `unknown actor ${describeValue(invoked.src)}`);
      }
    } else if (child.src === 'artifacts') {
      shaped(artifactStore, child.snapshot, where);
    } else {
      fail(where, `unknown actor ${describeValue(child.src)}`);
    }
  }
}
