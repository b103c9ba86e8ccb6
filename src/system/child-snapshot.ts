import type { AnyActorLogic, AnyActorRef, SnapshotFrom } from 'xstate';

/**
 * The snapshot of `parent`'s child `id`, typed as the snapshot of `TLogic`; undefined when
 * there is no such child. XState types an actor's children loosely (any actor), so the
 * caller names the logic it spawned under `id`: this is the one place where a parent's
 * knowledge of its own children becomes a type, instead of a cast at every read. In a pure
 * transition (XState's `transition`, a model's graph) the parent is an inert actor whose
 * snapshot has no children: there are none to read there.
 */
export function childSnapshot<TLogic extends AnyActorLogic>(
  parent: Pick<AnyActorRef, 'getSnapshot'>,
  id: string,
): SnapshotFrom<TLogic> | undefined {
  const child: AnyActorRef | undefined = parent.getSnapshot()?.children?.[id];
  return child?.getSnapshot();
}
