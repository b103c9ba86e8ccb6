import { isRoleboxError } from '../errors.js';
import { PIPELINE_SOURCE_TYPES, type RoleboxSourcePayloads } from '../pipeline/catalogue.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { SessionSnapshot, SystemAccess } from '../runtime/system-access.js';
import { functionOfRequestId, readRequests } from '../signal/approval-requests.js';
import type { HostEvent } from './host-events.js';
import { runtimePhaseOf } from './views.js';

/** What the bridge needs of its rolebox: the actors to watch, its host events, where errors go. */
export interface BridgeHost {
  readonly access: Pick<
    SystemAccess,
    'sessionActor' | 'artifactsActor' | 'loopActor' | 'sessionIds' | 'readFunction' | 'readSession'
  >;
  on(type: '*', handler: (event: HostEvent) => void): () => void;
  /** Reports an event the pipeline could not take. */
  onError(error: Error, sessionId: string): void;
}

/**
 * The version each request carried when it opened, by id, read from its function's ledger
 * (live, else retired). A request's `version` never changes once opened, so reading it after
 * the signal still gives what the request was opened on.
 */
function requestVersions(
  access: BridgeHost['access'],
  sessionId: string,
  ids: readonly string[],
): Record<string, number> {
  const versions: Record<string, number> = {};
  for (const id of ids) {
    const name = functionOfRequestId(id);
    if (name === undefined) continue;
    const kv =
      access.readFunction(sessionId, name)?.context.kv ??
      access.readSession(sessionId)?.context.retiredFunctions[name]?.context.kv;
    const request = kv ? readRequests(kv).find((candidate) => candidate.id === id) : undefined;
    if (request) versions[id] = request.version;
  }
  return versions;
}

/** One fact for the pipeline: a rolebox source type and its payload. */
type Fact<T extends keyof RoleboxSourcePayloads> = {
  type: T;
  payload: RoleboxSourcePayloads[T];
};

/**
 * Feeds the pipeline with the actor system's facts (SPEC-pipeline §7): agent signals,
 * completed functions, finished loops and rounds, session phase changes and artifact status
 * changes, each as a source event on scope `session:<id>`. It only enqueues (persisting and
 * running happen later), so the pipeline never blocks an actor.
 * Returns: a function that disconnects it.
 */
export function connectPipeline(host: BridgeHost, pipeline: Pipeline): () => void {
  // By session: a passivated or closed session's subscriptions go with it, so activating
  // and passivating sessions for ever does not pile them up.
  const subscriptions = new Map<string, { unsubscribe(): void }[]>();
  const track = (sessionId: string, subscription: { unsubscribe(): void }) => {
    const list = subscriptions.get(sessionId);
    if (list) list.push(subscription);
    else subscriptions.set(sessionId, [subscription]);
  };
  const release = (sessionId: string) => {
    for (const subscription of subscriptions.get(sessionId) ?? []) subscription.unsubscribe();
    subscriptions.delete(sessionId);
  };
  const watchedSessions = new Set<string>();
  const watchedLoops = new Set<string>();
  let connected = true;

  const enqueue: Enqueue = (sessionId, source) => {
    if (connected) enqueueFact(host, pipeline, sessionId, source);
  };

  const watchSession = (sessionId: string) => {
    const ref = host.access.sessionActor(sessionId);
    if (!ref || watchedSessions.has(sessionId)) return;
    watchedSessions.add(sessionId);
    const phaseOf = (snapshot: SessionSnapshot) => ({
      phase: runtimePhaseOf(snapshot.value),
      waiting: snapshot.context.waitingReason?.kind ?? null,
    });
    const first = ref.getSnapshot();
    let last = phaseOf(first);
    // A session's artifact store is spawned with its first artifact (an actor fewer for
    // every session that writes none): watched from now if it exists, else from the step
    // that spawns it, each artifact in it then new (from null), as an earlier watch saw it.
    let artifacts = watchArtifactStatuses(host.access, sessionId, enqueue, 'known');
    if (artifacts) track(sessionId, artifacts);
    track(
      sessionId,
      ref.subscribe({
        next: (snapshot) => {
          if (!artifacts) {
            artifacts = watchArtifactStatuses(host.access, sessionId, enqueue, 'new');
            if (artifacts) track(sessionId, artifacts);
          }
          const now = phaseOf(snapshot);
          if (now.phase === last.phase && now.waiting === last.waiting) return;
          enqueue(sessionId, {
            type: PIPELINE_SOURCE_TYPES.sessionPhaseChanged,
            payload: { sessionId, from: last.phase, to: now.phase, waitingReason: now.waiting },
          });
          last = now;
        },
        complete: () => {
          watchedSessions.delete(sessionId);
          release(sessionId);
        },
      }),
    );
    if (first.context.activeLoopId) watchLoop(sessionId, first.context.activeLoopId);
  };

  const watchLoop = (sessionId: string, loopId: string) => {
    const ref = host.access.loopActor(loopId);
    if (!ref || watchedLoops.has(loopId)) return;
    watchedLoops.add(loopId);
    const statuses = new Map<number, string>(
      ref.getSnapshot().context.rounds.map((round) => [round.round, round.status]),
    );
    track(
      sessionId,
      ref.subscribe({
        next: (snapshot) => {
          for (const round of snapshot.context.rounds) {
            const before = statuses.get(round.round);
            statuses.set(round.round, round.status);
            if (round.status === 'running' || before === round.status) continue;
            enqueue(sessionId, {
              type: PIPELINE_SOURCE_TYPES.loopRoundCompleted,
              payload: {
                sessionId,
                loopId,
                round: round.round,
                total: snapshot.context.total,
                taskId: round.workerTaskId,
                status: round.status,
                ...(round.durationMs === undefined ? {} : { durationMs: round.durationMs }),
              },
            });
          }
        },
        complete: () => watchedLoops.delete(loopId),
      }),
    );
  };

  const off = host.on('*', (event) => {
    switch (event.type) {
      case 'signal':
        enqueue(event.sessionId, {
          type: PIPELINE_SOURCE_TYPES.agentSignalEmitted,
          payload: {
            sessionId: event.sessionId,
            signalType: event.receipt.type,
            payload: event.payload,
            recordedOn: event.recordedOn,
            requests: event.receipt.requests ?? [],
            versions: requestVersions(host.access, event.sessionId, event.receipt.requests ?? []),
          },
        });
        return;
      case 'function_completed':
        enqueue(event.sessionId, {
          type: PIPELINE_SOURCE_TYPES.functionCompleted,
          payload: { sessionId: event.sessionId, function: event.function },
        });
        return;
      case 'loop_finished':
        enqueue(event.sessionId, {
          type: PIPELINE_SOURCE_TYPES.loopFinished,
          payload: { sessionId: event.sessionId, loopId: event.loopId, phase: event.phase },
        });
        return;
      case 'session_opened':
      case 'session_activated':
        watchSession(event.sessionId);
        return;
      case 'loop_started':
        watchLoop(event.sessionId, event.loopId);
        return;
      default:
        return;
    }
  });
  for (const sessionId of host.access.sessionIds()) watchSession(sessionId);

  return () => {
    connected = false;
    off();
    for (const sessionId of [...subscriptions.keys()]) release(sessionId);
  };
}

/** Hands one fact to the pipeline (see {@link enqueueFact}). */
type Enqueue = <T extends keyof RoleboxSourcePayloads>(sessionId: string, source: Fact<T>) => void;

/**
 * Enqueues a fact. enqueue() only validates synchronously; its persisting and running come
 * later, so the actor that produced the fact is never held up. A refusal goes to
 * `host.onError`, except once the pipeline has stopped.
 */
function enqueueFact<T extends keyof RoleboxSourcePayloads>(
  host: BridgeHost,
  pipeline: Pipeline,
  sessionId: string,
  source: Fact<T>,
): void {
  let intake: Promise<unknown>;
  try {
    intake = pipeline.enqueue({
      sourceType: source.type,
      payload: source.payload,
      scope: { sessionId },
    });
  } catch (error) {
    intake = Promise.reject(error);
  }
  intake.catch((error: unknown) => {
    if (isRoleboxError(error, 'pipeline_stopped')) return;
    host.onError(error instanceof Error ? error : new Error(String(error)), sessionId);
  });
}

/**
 * Enqueues an artifact status change for each artifact of the session's store whose status
 * changes from now on; with `present: 'new'`, the artifacts already in it count as changed
 * now (from null). Returns the subscription, or undefined when the session has no store.
 */
function watchArtifactStatuses(
  access: BridgeHost['access'],
  sessionId: string,
  enqueue: Enqueue,
  present: 'known' | 'new',
): { unsubscribe(): void } | undefined {
  const store = access.artifactsActor(sessionId);
  if (!store) return undefined;
  const statuses = new Map<string, string>(
    present === 'known'
      ? store.getSnapshot().context.artifacts.map((artifact) => [artifact.id, artifact.status])
      : [],
  );
  const changed = (snapshot: ReturnType<typeof store.getSnapshot>) => {
    for (const artifact of snapshot.context.artifacts) {
      const from = statuses.get(artifact.id) ?? null;
      if (from === artifact.status) continue;
      statuses.set(artifact.id, artifact.status);
      enqueue(sessionId, {
        type: PIPELINE_SOURCE_TYPES.artifactStatusChanged,
        payload: {
          sessionId,
          artifactId: artifact.id,
          name: artifact.name,
          from,
          to: artifact.status,
        },
      });
    }
  };
  if (present === 'new') changed(store.getSnapshot());
  return store.subscribe(changed);
}
