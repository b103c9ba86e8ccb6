// The approval workflow on rolebox's machines driven bare: the system machine of
// rolebox/machines in one XState actor, sent the same events the runtime sends for a
// workflow (open, activate, need_approval; restore, answer, idle), commands routed as the
// runtime routes them (bare-routing.ts), each step's session snapshot kept as JSON as a
// store would keep it (in a Map, or a row of a SQLite table: bare-records.ts), the session
// passivated after the pause and restored from that JSON for the answer. No runtime: no
// claim, checksum, envelope, check, directory, command guard, receipts, outbox or timers.
// It is the floor the approval workloads hit with this actor tree (root → shard → session →
// function), measured in the same run as LangGraph and rolebox, as P2 judges a loop round
// against the loop machine.
import { createActor, type InspectionEvent } from 'xstate';
import { realClock } from '../../src/adapters/real-clock.js';
import { functionChildId, sessionActorId } from '../../src/base/actor-ids.js';
import type { FunctionDefinition } from '../../src/index.js';
import type { RoleboxMachines } from '../../src/rolebox/build-machines.js';
import { type BareRecords, memoryRecords } from './bare-records.js';
import { deliverBare, openPausedBare, restoreBare } from './bare-routing.js';
import { roleboxMachines } from './rolebox-machines.js';

/** A workflow runner: the shape the LangGraph comparison drives each contender through. */
export interface BareApprovals {
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  quiesce(): Promise<void>;
  live(): number | undefined;
  /** The SQLite file, when the records are kept in one. */
  readonly file?: string;
  close(): Promise<void>;
}

/** Where the bare machines keep their sessions, and what else they do. */
export interface BareApprovalOptions {
  /** Where each step's session snapshot is kept (default: a Map). Closed with the runner. */
  readonly records?: BareRecords;
  /**
   * At most this many finished sessions stay live, the oldest passivated beyond it (as a
   * rolebox's `maxLiveSessions` passivates the least recently used); default: all stay.
   */
  readonly maxLive?: number;
  /** Sees every XState step, to count them. */
  readonly inspect?: (event: InspectionEvent) => void;
}

/** The system machine for each definition, built once (a fresh runner per workflow reuses it). */
const systemMachines = new WeakMap<FunctionDefinition, RoleboxMachines['system']>();

function systemMachineOf(approval: FunctionDefinition): RoleboxMachines['system'] {
  let system = systemMachines.get(approval);
  if (!system) {
    system = roleboxMachines([approval], realClock).system;
    systemMachines.set(approval, system);
  }
  return system;
}

/**
 * The approval workflow of `approval` on the bare machines, sessions passivated while they
 * wait.
 */
export function bareMachineApprovals(
  approval: FunctionDefinition,
  { records = memoryRecords(), maxLive, inspect }: BareApprovalOptions = {},
): BareApprovals {
  const root = createActor(systemMachineOf(approval), inspect ? { inspect } : {});
  root.start();
  // Finished sessions kept live, oldest first.
  const finished: string[] = [];
  const deliver = (sessionId: string, command: object) => deliverBare(root, sessionId, command);
  const save = (sessionId: string) => {
    const actor = root.system.get(sessionActorId(sessionId));
    records.set(sessionId, JSON.stringify(actor.getPersistedSnapshot()));
    return actor;
  };
  return {
    async pause(id) {
      openPausedBare(root, id, approval.name, Date.now(), 'prod');
      if (
        save(id).getSnapshot().children[functionChildId(approval.name)]?.getSnapshot().value !==
        'gated'
      )
        throw new Error(`bare machines: ${id} did not pause`);
      root.send({ type: 'system.passivate_session', sessionId: id });
    },
    async resume(id) {
      const at = Date.now();
      const text = records.get(id);
      if (text === undefined) throw new Error(`bare machines: ${id} was not stored`);
      restoreBare(root, id, at, JSON.parse(text));
      deliver(id, {
        type: 'session.signal',
        signal: { type: 'answer', payload: { approved: true } },
        at,
      });
      deliver(id, { type: 'session.idle', at });
      const context = save(id).getSnapshot().context as {
        retiredFunctions: Record<string, { reason: string }>;
      };
      if (context.retiredFunctions[approval.name]?.reason !== 'completed')
        throw new Error(`bare machines: ${id} did not complete`);
      // A finished workflow stays live, as a rolebox session does until its idle sweep or,
      // beyond `maxLive`, until the least recently used are passivated.
      finished.push(id);
      const oldest =
        maxLive !== undefined && finished.length > maxLive ? finished.shift() : undefined;
      if (oldest !== undefined) root.send({ type: 'system.passivate_session', sessionId: oldest });
    },
    quiesce: async () => {},
    live: () => finished.length,
    ...(records.file ? { file: records.file } : {}),
    async close() {
      root.stop();
      records.close();
    },
  };
}
