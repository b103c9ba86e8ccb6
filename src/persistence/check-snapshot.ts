import type { AnyStateMachine } from 'xstate';
import type { z } from 'zod';
import {
  artifactsActorId,
  functionActorId,
  functionChildId,
  LOOP_CHILD_ID,
  loopActorId,
  sessionActorId,
} from '../base/actor-ids.js';
import { topStateOf } from '../base/state-value.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { FunctionCatalog } from '../function/catalog.js';
import { LOOP_STATE_SCHEMA_VERSION } from '../loop/constants.js';
import { loopStateLacks } from '../loop/effects.js';
import { isTerminalLoopPhase } from '../loop/types.js';
import {
  artifactStoreSnapshotSchema,
  functionContextSchema,
  loopContextSchema,
  loopStateSchema,
  persistedMachineSchema,
  sessionContextSchema,
} from './snapshot-schemas.js';

/** The machines a stored session subtree is checked against. */
export interface SnapshotMachines {
  readonly session: AnyStateMachine;
  readonly function: AnyStateMachine;
  readonly loop: AnyStateMachine;
}

/** A persisted machine snapshot, as far as the checks read it. */
type PersistedMachine = z.infer<typeof persistedMachineSchema>;

/** A stored session that passed every check, ready to be handed to XState. */
export interface CheckedSession {
  /** The snapshot to restore (the stored one, checked). */
  readonly snapshot: PersistedMachine & {
    readonly context: { readonly createdAt: number; readonly activeLoopId: string | null };
  };
  /** Every systemId the subtree registers once restored (no two sessions may share one). */
  readonly systemIds: readonly string[];
}

/** The child id of a session's artifact store. */
const ARTIFACTS_CHILD = 'artifacts';

// The checks' helpers live at module level, not as closures of checkSessionSnapshot: a
// session is checked on every activation, and closures made per call (named, under tsx)
// were a sixth of a check's time.

/** Throws the `invalid_snapshot` error of session `sessionId`'s record. */
function failCheck(sessionId: string, where: string, why: string): never {
  throw new RoleboxError(
    'invalid_snapshot',
    `stored session ${describeValue(sessionId)} cannot be restored: ${where}: ${why}`,
    { sessionId, where },
  );
}

/** `value`, checked against `schema` (the stored value itself is kept, not zod's copy). */
function shapedAs<T extends z.ZodType>(
  sessionId: string,
  schema: T,
  value: unknown,
  where: string,
): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0] as z.core.$ZodIssue;
    failCheck(
      sessionId,
      where,
      `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`,
    );
  }
  return value as z.infer<T>;
}

/** Checks that a stored state value (and history) is one of `machine`'s. */
function checkStateValue(
  sessionId: string,
  machine: AnyStateMachine,
  stored: PersistedMachine,
  where: string,
): void {
  // XState restores `historyValue` as it finds it, and a transition later reads it: it
  // may only name the machine's history states (rolebox's machines have none).
  const history = (stored as { historyValue?: unknown }).historyValue;
  if (history !== undefined) {
    if (typeof history !== 'object' || history === null || Array.isArray(history))
      failCheck(sessionId, where, `historyValue must be an object, got ${describeValue(history)}`);
    const known = historyStateIds(machine);
    for (const key of Object.keys(history as object))
      if (!known.has(key))
        failCheck(sessionId, where, `historyValue names no history state: ${describeValue(key)}`);
  }
  // Resolving a state builds a whole snapshot; the valid values of a machine are few and
  // repeat across records, so each is resolved once (an invalid one is never remembered).
  const key = JSON.stringify(stored.value);
  let valid = validValuesByMachine.get(machine);
  if (!valid) {
    valid = new Set();
    validValuesByMachine.set(machine, valid);
  }
  if (valid.has(key)) return;
  try {
    machine.resolveState({ value: stored.value as never, context: stored.context });
  } catch (error) {
    failCheck(
      sessionId,
      where,
      `unknown state ${describeValue(stored.value)} (${(error as Error).message})`,
    );
  }
  if (valid.size < MAX_REMEMBERED_VALUES) valid.add(key);
}

/** Checks a child's systemId. */
function expectSystemIdOf(
  sessionId: string,
  childId: string,
  child: { systemId?: string },
  expected: string,
): void {
  if (child.systemId !== expected)
    failCheck(
      sessionId,
      `child ${childId}`,
      `its systemId is ${describeValue(child.systemId)}, expected ${describeValue(expected)}`,
    );
}

/**
 * Checks a stored session subtree whole before anything of it reaches XState (SPEC §6):
 * the shape of every context field (session, functions, loop, artifacts, the last loop);
 * every state value; that the ids agree with the record's key (the session's id, each
 * function's `sessionId`, each loop's `originSessionId`, every child's id and systemId);
 * that the live functions and the active loop are exactly the live children, each function
 * still defined; that the artifact store is there; that a loop has no child actors and its
 * context holds what its state needs (the task it waits for, its deadline). A loop state
 * written by a newer rolebox is refused as too new.
 *
 * Returns: the snapshot to restore and the systemIds it will register.
 * Throws: `invalid_snapshot` naming the session, the part and what is wrong;
 * `snapshot_too_new` for a loop state with a schema version above this code's.
 */
export function checkSessionSnapshot(
  sessionId: string,
  snapshot: unknown,
  machines: SnapshotMachines,
  catalog: FunctionCatalog,
): CheckedSession {
  const session = shapedAs(sessionId, persistedMachineSchema, snapshot, 'session');
  if (session.status !== 'active')
    failCheck(sessionId, 'session', `its status is ${describeValue(session.status)}`);
  const context = shapedAs(sessionId, sessionContextSchema, session.context, 'session context');
  if (context.sessionId !== sessionId)
    failCheck(
      sessionId,
      'session context',
      `it belongs to session ${describeValue(context.sessionId)}`,
    );
  checkStateValue(sessionId, machines.session, session, 'session');
  const phase = topStateOf(session.value);
  const waitingFor = phase === 'waiting_user' ? topStateOf(Object.values(session.value)[0]) : null;
  if ((context.waitingReason?.kind ?? null) !== waitingFor)
    failCheck(
      sessionId,
      'session context',
      `waitingReason ${describeValue(context.waitingReason?.kind ?? null)} does not match state ${describeValue(session.value)}`,
    );
  if (waitingFor === null && context.waitExpiresAt !== null)
    failCheck(
      sessionId,
      'session context',
      `waitExpiresAt ${describeValue(context.waitExpiresAt)} is set while the session does not wait (${describeValue(session.value)})`,
    );
  if (context.lastLoop !== null) {
    const lastLoop = shapedAs(
      sessionId,
      loopStateSchema,
      context.lastLoop,
      'session context lastLoop',
    );
    checkLoopVersion(lastLoop.schemaVersion, sessionId, 'lastLoop');
    if (lastLoop.originSessionId !== sessionId)
      failCheck(
        sessionId,
        'session context lastLoop',
        `it belongs to session ${describeValue(lastLoop.originSessionId)}`,
      );
    if (!isTerminalLoopPhase(lastLoop.phase))
      failCheck(
        sessionId,
        'session context lastLoop',
        `a finished loop cannot be ${lastLoop.phase}`,
      );
  }
  for (const [name, retired] of Object.entries(context.retiredFunctions)) {
    if (retired.context.sessionId !== sessionId || retired.context.name !== name)
      failCheck(
        sessionId,
        `retired function ${name}`,
        `it is ${describeValue(retired.context.name)} of session ${describeValue(retired.context.sessionId)}`,
      );
  }

  const systemIds = [sessionActorId(sessionId)];
  const children: Record<string, PersistedMachine['children'][string]> = {};
  let liveLoopId: string | null = null;
  for (const [childId, child] of Object.entries(session.children)) {
    const where = `child ${childId}`;
    if (child.src === 'artifacts') {
      if (childId !== ARTIFACTS_CHILD)
        failCheck(sessionId, where, `an artifact store must be the child ${ARTIFACTS_CHILD}`);
      expectSystemIdOf(sessionId, childId, child, artifactsActorId(sessionId));
      shapedAs(sessionId, artifactStoreSnapshotSchema, child.snapshot, where);
    } else if (child.src === 'function') {
      checkFunctionChild(sessionId, childId, child, context.liveFunctions, machines, catalog);
    } else if (child.src === 'loop') {
      const live = checkLoopChild(sessionId, childId, child, machines);
      if (live !== null) {
        if (liveLoopId !== null)
          failCheck(sessionId, where, `the session already has live loop ${liveLoopId}`);
        liveLoopId = live;
      }
    } else {
      failCheck(sessionId, where, `unknown actor ${describeValue(child.src)}`);
    }
    children[childId] = child;
    if (child.systemId !== undefined) systemIds.push(child.systemId);
  }
  for (const name of context.liveFunctions) {
    if (!Object.hasOwn(session.children, functionChildId(name)))
      failCheck(sessionId, 'session', `live function ${describeValue(name)} has no actor`);
  }
  if (!Object.hasOwn(session.children, ARTIFACTS_CHILD)) {
    // The store is spawned with the first artifact: a session without one has written
    // none, so nothing in it may name an artifact.
    const named = artifactNamedWithoutStore(context, session.children);
    if (named) failCheck(sessionId, 'session', `its artifact store is missing, yet ${named}`);
  }
  if (context.activeLoopId !== liveLoopId)
    failCheck(
      sessionId,
      'session',
      `its active loop is ${describeValue(context.activeLoopId)} but its live loop actor is ${describeValue(liveLoopId)}`,
    );
  return {
    snapshot: { ...session, children } as CheckedSession['snapshot'],
    systemIds,
  };
}

/** What in a session with no artifact store names an artifact (it would need one), if anything. */
function artifactNamedWithoutStore(
  context: z.infer<typeof sessionContextSchema>,
  children: PersistedMachine['children'],
): string | undefined {
  const waiting = context.waitingReason;
  if (waiting !== null && 'artifactId' in waiting)
    return `it waits for a review of ${describeValue(waiting.artifactId)}`;
  if (context.reviewArtifactId !== null)
    return `it reviews ${describeValue(context.reviewArtifactId)}`;
  for (const [childId, child] of Object.entries(children)) {
    if (child.src !== 'function') continue;
    const known = (child.snapshot as { context: z.infer<typeof functionContextSchema> }).context
      .facts.artifacts;
    if (known.length > 0)
      return `its function ${childId} knows artifact ${describeValue(known[0])}`;
  }
  return undefined;
}

/**
 * A stored session whose checksum shows it is exactly what this code saved (readEnvelope's
 * `trusted`): its shape was right when it was written, so the deep structural check is
 * skipped. What depends on this process is still checked: each live function is still
 * defined (the catalog may have changed since), and a loop state is not from newer code.
 *
 * Returns: the snapshot to restore and the systemIds it will register.
 * Throws: `invalid_snapshot` for a live function no longer defined; `snapshot_too_new`.
 */
export function trustedSessionSnapshot(
  sessionId: string,
  snapshot: unknown,
  catalog: FunctionCatalog,
): CheckedSession {
  const session = snapshot as CheckedSession['snapshot'];
  const { liveFunctions } = session.context as unknown as { liveFunctions: readonly string[] };
  for (const name of liveFunctions)
    if (!catalog.get(name))
      failCheck(
        sessionId,
        `child ${functionChildId(name)}`,
        `function ${describeValue(name)} is not defined any more`,
      );
  const systemIds = [sessionActorId(sessionId)];
  for (const [childId, child] of Object.entries(session.children)) {
    if (child.src === 'loop')
      checkLoopVersion(
        (child.snapshot as { context: { schemaVersion?: unknown } }).context.schemaVersion,
        sessionId,
        `child ${childId}`,
      );
    if (child.systemId !== undefined) systemIds.push(child.systemId);
  }
  return { snapshot: session, systemIds };
}

/** A stored session's child, as {@link checkSessionSnapshot} reads it. */
type StoredChild = PersistedMachine['children'][string];

/**
 * Checks a function child: its context belongs to the session, it is the child and has the
 * systemId its name gives, it is listed as live, active and still defined, and its state
 * and status agree.
 */
function checkFunctionChild(
  sessionId: string,
  childId: string,
  child: StoredChild,
  liveFunctions: readonly string[],
  machines: SnapshotMachines,
  catalog: FunctionCatalog,
): void {
  const where = `child ${childId}`;
  const stored = shapedAs(sessionId, persistedMachineSchema, child.snapshot, where);
  const fn = shapedAs(sessionId, functionContextSchema, stored.context, `${where} context`);
  if (fn.sessionId !== sessionId)
    failCheck(
      sessionId,
      `${where} context`,
      `it belongs to session ${describeValue(fn.sessionId)}`,
    );
  const expectedId = functionChildId(fn.name);
  if (childId !== expectedId)
    failCheck(
      sessionId,
      where,
      `function ${describeValue(fn.name)} must be the child ${expectedId}`,
    );
  expectSystemIdOf(sessionId, childId, child, functionActorId(sessionId, fn.name));
  // A function has an actor only while it is live (session machine 7): a retired one's last
  // state is in the session's retiredFunctions.
  if (!liveFunctions.includes(fn.name))
    failCheck(sessionId, where, `function ${fn.name} has an actor but is not listed as live`);
  if (stored.status !== 'active')
    failCheck(sessionId, where, `function ${fn.name} is ${stored.status} but listed as live`);
  if (!catalog.get(fn.name))
    failCheck(sessionId, where, `function ${describeValue(fn.name)} is not defined any more`);
  checkStateValue(sessionId, machines.function, stored, where);
  if (isFinalValue(machines.function, stored.value))
    failCheck(sessionId, where, `a function in ${describeValue(stored.value)} cannot be active`);
}

/**
 * Checks a loop child: a loop state this code can read, of this session, the child and
 * systemId it must be, no child actors, a context that holds what its state needs, and a
 * status that agrees with its state. Returns its id while it is live, else null.
 */
function checkLoopChild(
  sessionId: string,
  childId: string,
  child: StoredChild,
  machines: SnapshotMachines,
): string | null {
  const where = `child ${childId}`;
  const stored = shapedAs(sessionId, persistedMachineSchema, child.snapshot, where);
  checkLoopVersion((stored.context as { schemaVersion?: unknown }).schemaVersion, sessionId, where);
  const loop = shapedAs(sessionId, loopContextSchema, stored.context, `${where} context`);
  if (loop.originSessionId !== sessionId)
    failCheck(
      sessionId,
      `${where} context`,
      `it belongs to session ${describeValue(loop.originSessionId)}`,
    );
  if (childId !== LOOP_CHILD_ID)
    failCheck(
      sessionId,
      where,
      `loop ${describeValue(loop.id)} must be the child ${LOOP_CHILD_ID}`,
    );
  expectSystemIdOf(sessionId, childId, child, loopActorId(loop.id));
  checkStateValue(sessionId, machines.loop, stored, where);
  // A loop asks for its I/O as effects: it has no child actors of its own.
  const extra = Object.keys(stored.children);
  if (extra.length > 0)
    failCheck(sessionId, where, `a loop has no child actors, the record holds ${extra.join(', ')}`);
  const lacking = loopStateLacks(stored.value, loop);
  if (lacking !== undefined)
    failCheck(
      sessionId,
      `${where} context`,
      `its state ${describeValue(stored.value)} needs ${lacking}`,
    );
  const finished = isFinalValue(machines.loop, stored.value);
  if (finished !== (stored.status === 'done'))
    failCheck(
      sessionId,
      where,
      `a loop in ${describeValue(stored.value)} cannot be ${stored.status}`,
    );
  return finished ? null : loop.id;
}

/** The ids of a machine's history states (a `historyValue` may only name these). */
const historyIdsByMachine = new WeakMap<AnyStateMachine, ReadonlySet<string>>();

/** State values (as JSON) known to resolve, per machine. */
const validValuesByMachine = new WeakMap<AnyStateMachine, Set<string>>();
/** A bound on them: a machine has few configurations, but the bound keeps memory fixed. */
const MAX_REMEMBERED_VALUES = 256;

function historyStateIds(machine: AnyStateMachine): ReadonlySet<string> {
  // A machine's states never change: walked once per machine, not once per record.
  const known = historyIdsByMachine.get(machine);
  if (known) return known;
  const ids = new Set<string>();
  historyIdsByMachine.set(machine, ids);
  type Node = { id: string; type: string; states: Record<string, Node> };
  const walk = (node: Node) => {
    if (node.type === 'history') ids.add(node.id);
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root as unknown as Node);
  return ids;
}

/**
 * True when the top-level state of `value` is a final state of `machine`: a snapshot in one
 * is done, and one that is not never answers another event as a live actor must.
 */
function isFinalValue(machine: AnyStateMachine, value: unknown): boolean {
  const top = topStateOf(value);
  return Object.hasOwn(machine.root.states, top) && machine.root.states[top]?.type === 'final';
}

/** Refuses a loop state written by a newer rolebox (SPEC §6: too new is never half-loaded). */
function checkLoopVersion(version: unknown, sessionId: string, where: string): void {
  if (typeof version === 'number' && version > LOOP_STATE_SCHEMA_VERSION) {
    throw new RoleboxError(
      'snapshot_too_new',
      `stored session ${describeValue(sessionId)}: ${where} has loop state version ${version}, newer than this code's ${LOOP_STATE_SCHEMA_VERSION}; upgrade rolebox to read it`,
      { sessionId, where, schemaVersion: version },
    );
  }
}
