import { fromStore } from '@xstate/store';
import type { ArtifactRecord, ArtifactStatus } from './artifact.js';
import { canChangeArtifactStatus } from './artifact-lifecycle.js';

/** The artifact store's state: plain JSON, persisted with its session. */
export interface ArtifactStoreContext {
  /** Sequence for ids (`art-1`, `art-2`, …): deterministic, so replays match. */
  readonly nextSeq: number;
  /** Every version of every artifact, oldest first. */
  readonly artifacts: readonly ArtifactRecord[];
}

/** The store of a session that has no artifacts yet. */
export const EMPTY_ARTIFACT_STORE: ArtifactStoreContext = { nextSeq: 1, artifacts: [] };

/** A write: a new draft, or an edit of the current draft of that name. */
export interface ArtifactWrite {
  readonly name: string;
  readonly workerId?: string;
  readonly content?: string;
  readonly summary?: string;
  readonly at: number;
}

/** The live version of `name`: the newest one that has not been superseded. */
export function currentArtifact(
  artifacts: readonly ArtifactRecord[],
  name: string,
): ArtifactRecord | undefined {
  for (let i = artifacts.length - 1; i >= 0; i--) {
    const artifact = artifacts[i] as ArtifactRecord;
    if (artifact.name === name && artifact.status !== 'superseded') return artifact;
  }
  return undefined;
}

/**
 * The id a write of `name` lands on: the current draft's own (a draft is edited in place),
 * else the next id of the sequence. The session announces a write under this id before the
 * store has applied it, so both use this one rule.
 */
export function nextArtifactId(context: ArtifactStoreContext, name: string): string {
  const current = currentArtifact(context.artifacts, name);
  return current?.status === 'drafted' ? current.id : `art-${context.nextSeq}`;
}

/**
 * Applies a write: a draft is edited in place; any other live version of the name is
 * superseded by a new draft (reviewed work is never rewritten).
 */
export function applyArtifactWrite(
  context: ArtifactStoreContext,
  write: ArtifactWrite,
): ArtifactStoreContext {
  const current = currentArtifact(context.artifacts, write.name);
  const id = nextArtifactId(context, write.name);
  const fields = {
    ...(write.workerId === undefined ? {} : { workerId: write.workerId }),
    ...(write.content === undefined ? {} : { content: write.content }),
    ...(write.summary === undefined ? {} : { summary: write.summary }),
  };
  if (current?.status === 'drafted') {
    return {
      ...context,
      artifacts: context.artifacts.map((artifact) =>
        artifact === current ? { ...artifact, ...fields, updatedAt: write.at } : artifact,
      ),
    };
  }
  const created: ArtifactRecord = {
    id,
    name: write.name,
    ...fields,
    status: 'drafted',
    createdAt: write.at,
    updatedAt: write.at,
  };
  return {
    nextSeq: context.nextSeq + 1,
    artifacts: [
      ...context.artifacts.map((artifact) =>
        artifact === current
          ? { ...artifact, status: 'superseded' as const, updatedAt: write.at }
          : artifact,
      ),
      created,
    ],
  };
}

/** Applies a status change when the lifecycle allows it; otherwise leaves the store as it is. */
export function applyArtifactStatus(
  context: ArtifactStoreContext,
  change: { id: string; status: ArtifactStatus; at: number },
): ArtifactStoreContext {
  const target = context.artifacts.find((artifact) => artifact.id === change.id);
  if (!target || !canChangeArtifactStatus(target.status, change.status)) return context;
  return {
    ...context,
    artifacts: context.artifacts.map((artifact) =>
      artifact === target ? { ...artifact, status: change.status, updatedAt: change.at } : artifact,
    ),
  };
}

/**
 * A session's artifacts as @xstate/store logic, spawned as the session's child `artifacts`
 * so the inspector sees it and it persists with its session. Illegal status changes are
 * refused by the facade (with an error) before they get here; the store ignores them.
 */
export const artifactStoreLogic = fromStore({
  context: EMPTY_ARTIFACT_STORE,
  on: {
    write: (context, event: ArtifactWrite) => applyArtifactWrite(context, event),
    setStatus: (context, event: { id: string; status: ArtifactStatus; at: number }) =>
      applyArtifactStatus(context, event),
  },
});

/** The events the artifact store accepts. */
export type ArtifactStoreEvent =
  | ({ readonly type: 'write' } & ArtifactWrite)
  | {
      readonly type: 'setStatus';
      readonly id: string;
      readonly status: ArtifactStatus;
      readonly at: number;
    };
