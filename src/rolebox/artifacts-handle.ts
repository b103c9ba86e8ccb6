import { ARTIFACT_NAME_PATTERN, ARTIFACT_NAME_RULE } from '../base/input-limits.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { ArtifactRecord, ArtifactStatus } from '../session/artifact.js';
import { ARTIFACT_STATUSES, assertArtifactStatusChange } from '../session/artifact-lifecycle.js';
import { type ArtifactWrite, currentArtifact } from '../session/artifact-store.js';
import type { SessionCommand } from '../session/commands.js';
import { guardCommands } from './command-guard.js';
import { ARTIFACT_COMMAND_ROWS } from './command-table.js';

/** What the artifacts handle needs from its session. Internal. */
export interface ArtifactsHost {
  readonly sessionId: string;
  now(): number;
  /** Throws (`unknown_session`, …) unless the session is live in this rolebox (activating it when passivated). */
  requireSession(): void;
  artifacts(): readonly ArtifactRecord[];
  deliver(command: SessionCommand): void;
}

/**
 * A session's artifacts. Writes create drafts (or edit the current draft of that name);
 * reviewed versions are never rewritten, a new write supersedes them. Status changes follow
 * the lifecycle of SPEC §4.1; only accepted artifacts are facts. Every method goes through
 * the session handle's guard, driven by its row in `ARTIFACT_COMMAND_ROWS`: arguments read
 * once, the session live in this rolebox.
 */
export class ArtifactsHandle {
  static {
    guardCommands(
      ArtifactsHandle.prototype,
      'session.artifacts',
      ARTIFACT_COMMAND_ROWS,
      (handle) => {
        if (typeof handle !== 'object' || handle === null || !(#host in handle))
          throw new RoleboxError(
            'invalid_argument',
            `an artifacts handle method was called on ${describeValue(handle)}, not on session.artifacts`,
          );
        handle.#host.requireSession();
      },
    );
  }

  readonly #host: ArtifactsHost;

  /** Internal: use `session.artifacts`. */
  constructor(host: ArtifactsHost) {
    this.#host = host;
  }

  /**
   * Writes artifact `name`: edits its draft, or creates a new draft that supersedes the
   * version under review, accepted, rejected or in revision.
   * Returns: the draft. Throws: `invalid_argument` for a bad name or field.
   */
  write(artifact: Omit<ArtifactWrite, 'at'>): ArtifactRecord {
    if (typeof artifact !== 'object' || artifact === null) {
      throw new RoleboxError(
        'invalid_argument',
        `an artifact is { name, workerId?, content?, summary? }, got ${describeValue(artifact)}`,
      );
    }
    const { name, workerId, content, summary } = artifact;
    if (typeof name !== 'string' || !ARTIFACT_NAME_PATTERN.test(name)) {
      throw new RoleboxError(
        'invalid_argument',
        `artifact name must be ${ARTIFACT_NAME_RULE}, got ${describeValue(name)}`,
        {
          name,
        },
      );
    }
    for (const [field, value] of Object.entries({ workerId, content, summary })) {
      if (value !== undefined && typeof value !== 'string') {
        throw new RoleboxError(
          'invalid_argument',
          `artifact ${field} must be a string, got ${describeValue(value)}`,
          { field },
        );
      }
    }
    this.#host.deliver({
      type: 'session.write_artifact',
      name,
      ...(workerId === undefined ? {} : { workerId }),
      ...(content === undefined ? {} : { content }),
      ...(summary === undefined ? {} : { summary }),
      at: this.#host.now(),
    });
    return structuredClone(currentArtifact(this.#host.artifacts(), name) as ArtifactRecord);
  }

  /**
   * Changes an artifact's status by hand (runtime events do it for the review flow).
   * Throws: `unknown_artifact`, `invalid_artifact_transition` naming both statuses.
   */
  setStatus(id: string, status: ArtifactStatus): ArtifactRecord {
    const artifact = this.require(id);
    if (!ARTIFACT_STATUSES.includes(status)) {
      throw new RoleboxError(
        'invalid_artifact_transition',
        `unknown artifact status ${describeValue(status)}; expected one of ${ARTIFACT_STATUSES.join(', ')}`,
        {
          status,
        },
      );
    }
    assertArtifactStatusChange(id, artifact.status, status);
    this.#host.deliver({ type: 'session.set_artifact_status', id, status, at: this.#host.now() });
    return this.require(id);
  }

  /** The artifact `id`, if the session has it. */
  get(id: string): ArtifactRecord | undefined {
    const found = this.#host.artifacts().find((artifact) => artifact.id === id);
    return found ? structuredClone(found) : undefined;
  }

  /** The artifact `id`. Throws: `unknown_artifact` naming it. */
  require(id: string): ArtifactRecord {
    const found = this.get(id);
    if (!found)
      throw new RoleboxError(
        'unknown_artifact',
        `session ${this.#host.sessionId} has no artifact ${describeValue(id)}`,
        { id },
      );
    return found;
  }

  /** Every version of every artifact, oldest first. */
  list(): ArtifactRecord[] {
    return structuredClone([...this.#host.artifacts()]);
  }

  /** The accepted artifacts: the only ones that may be served as facts downstream. */
  facts(): ArtifactRecord[] {
    return structuredClone(
      this.#host.artifacts().filter((artifact) => artifact.status === 'accepted'),
    );
  }
}
