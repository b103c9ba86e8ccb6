// Why not XState's own `transition(logic, snapshot, event)`: it builds an inert actor of the
// machine for each call, and building one computes the machine's initial snapshot with no
// input, which our machines cannot make (their context is made from their input): a
// TypeError is thrown, its stack captured and caught inside XState, every call. An effect
// result of two events paid ~0.2 ms for it (issue 24's profile). An empty actor gives the
// same inert scope (its own fresh system, no children, nothing executed) for nothing.

import {
  type AnyStateMachine,
  createEmptyActor,
  type EventFromLogic,
  type SnapshotFrom,
} from 'xstate';

/**
 * The snapshot `machine` would be in once `event` is taken from `snapshot`, as XState's
 * `transition` answers it: nothing is executed (actions are resolved, not run), children
 * it would spawn are built in a system of their own, and the scope's `self` has no children
 * (as XState's inert actor has none).
 */
export function pureTransition<M extends AnyStateMachine>(
  machine: M,
  snapshot: SnapshotFrom<M>,
  event: EventFromLogic<M>,
): SnapshotFrom<M> {
  const self = createEmptyActor();
  const scope = {
    self,
    id: '',
    sessionId: '',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: () => {},
    system: self.system,
  };
  return machine.transition(snapshot, event, scope as never) as SnapshotFrom<M>;
}
