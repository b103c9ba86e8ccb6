// The approval workflow on rolebox's machines driven bare: the system machine of
// rolebox/machines in one XState actor, sent the same events the runtime sends for a
// workflow (open, activate, need_approval; restore, answer, idle), each step's session
// snapshot kept as JSON in a Map as a store would keep it, the session passivated after the
// pause and restored from that JSON for the answer, commands routed as the runtime routes
// them (bare-routing.ts). No runtime: no claim, checksum,
// envelope, check, directory, command guard, receipts, outbox or timers. It is the floor
// W1 hits with this actor tree (root → shard → session → function), measured in the same
// run as LangGraph and rolebox, as P2 judges a loop round against the loop machine.
import { createActor, type InspectionEvent } from 'xstate';
import { realClock } from '../../src/adapters/real-clock.js';
import { functionChildId, sessionActorId } from '../../src/base/actor-ids.js';
import type { FunctionDefinition } from '../../src/index.js';
import { deliverBare, restoreBare } from './bare-routing.js';
import { roleboxMachines } from './rolebox-machines.js';

/** A workflow runner: the shape the LangGraph comparison drives each contender through. */
export interface BareApprovals {
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  quiesce(): Promise<void>;
  live(): number | undefined;
  close(): Promise<void>;
}

/**
 * The approval workflow of `approval` on the bare machines, sessions passivated while they
 * wait; `inspect` (optional) sees every XState step, to count them.
 */
export function bareMachineApprovals(
  approval: FunctionDefinition,
  inspect?: (event: InspectionEvent) => void,
): BareApprovals {
  const root = createActor(
    roleboxMachines([approval], realClock).system,
    inspect ? { inspect } : {},
  );
  root.start();
  const stored = new Map<string, string>();
  let live = 0;
  const deliver = (sessionId: string, command: object) => deliverBare(root, sessionId, command);
  const save = (sessionId: string) => {
    const actor = root.system.get(sessionActorId(sessionId));
    stored.set(sessionId, JSON.stringify(actor.getPersistedSnapshot()));
    return actor;
  };
  return {
    async pause(id) {
      const at = Date.now();
      root.send({ type: 'system.open_session', sessionId: id, at, nonce: id });
      deliver(id, { type: 'session.activate', name: approval.name, at });
      deliver(id, {
        type: 'session.signal',
        signal: { type: 'need_approval', payload: { reason: 'prod' } },
        at,
      });
      if (
        save(id).getSnapshot().children[functionChildId(approval.name)]?.getSnapshot().value !==
        'gated'
      )
        throw new Error(`bare machines: ${id} did not pause`);
      root.send({ type: 'system.passivate_session', sessionId: id });
    },
    async resume(id) {
      const at = Date.now();
      const text = stored.get(id);
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
      // A finished workflow stays live, as a rolebox session does until its idle sweep.
      live++;
    },
    quiesce: async () => {},
    live: () => live,
    async close() {
      root.stop();
    },
  };
}
