import type { InspectionEvent, Observer } from 'xstate';

/** The parts of an actor ref this file reads: its local id and its parent. */
interface InspectedRef {
  readonly id: string;
  readonly _parent?: InspectedRef;
}

const SHARD_ID = /^shard:\d+$/;

/** True for a shard actor (`shard:<k>`, a child of the root, which has no parent). */
function isShard(ref: InspectedRef | undefined): ref is InspectedRef & { _parent: InspectedRef } {
  return (
    ref !== undefined &&
    SHARD_ID.test(ref.id) &&
    ref._parent !== undefined &&
    ref._parent._parent === undefined
  );
}

/** `ref` as seen with `parent` for its parent (the real actor stays the prototype). */
function reparented(ref: InspectedRef, parent: InspectedRef): InspectedRef {
  // Configurable and writable, as an actor's own `_parent` is: a view over this one (the
  // Restate step inspection's Proxy) may then answer its own parent for it.
  return Object.create(ref, {
    _parent: { value: parent, configurable: true, writable: true, enumerable: true },
  });
}

/**
 * What an inspector sees of an event that routes through a shard: the root handing a shard
 * a command, and a shard passing a session's report up, are dropped; a session's report
 * reaches the root and a shard's command to a session comes from the root. Undefined: dropped.
 */
function withoutShardLegs(event: InspectionEvent): InspectionEvent | undefined {
  if (event.type !== '@xstate.event') return event;
  const target = event.actorRef as unknown as InspectedRef;
  const source = event.sourceRef as unknown as InspectedRef | undefined;
  if (isShard(target))
    return source?._parent === target
      ? ({ ...event, actorRef: target._parent } as unknown as InspectionEvent)
      : undefined;
  if (isShard(source))
    return target === source._parent
      ? undefined
      : ({ ...event, sourceRef: source._parent } as unknown as InspectionEvent);
  return event;
}

/**
 * The inspection observer that leaves shards out (issue 26): a shard (`shard:<k>`) only holds
 * sessions by a hash of their id, bookkeeping that would flood a viewer (its announcement,
 * snapshots and routing for every shard in use). Its actors, snapshots, steps and actions
 * are dropped, a session is announced as the root's child, and routing through a shard is
 * shown as the root's (see {@link withoutShardLegs}). The journal does not go through it:
 * it records what the actors received.
 */
export function hidingShards(
  inspect: Observer<InspectionEvent> | ((event: InspectionEvent) => void),
): Observer<InspectionEvent> {
  const forward =
    typeof inspect === 'function' ? inspect : (event: InspectionEvent) => inspect.next?.(event);
  return {
    next(event) {
      const shown = withoutShardLegs(event);
      if (shown === undefined) return;
      const ref = shown.actorRef as unknown as InspectedRef;
      if (isShard(ref)) return;
      if (shown.type === '@xstate.actor' && isShard(ref._parent))
        return forward({
          ...shown,
          actorRef: reparented(ref, ref._parent._parent as InspectedRef),
        } as unknown as InspectionEvent);
      forward(shown);
    },
  };
}
