import { ownValue } from '../base/own-keys.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { ArtifactStatus } from './artifact.js';

/**
 * The legal status changes of an artifact (SPEC §4.1):
 * drafted → under_review → accepted | rejected | revision_requested, and any version but a
 * superseded one may be superseded by a newer one.
 */
export const ARTIFACT_TRANSITIONS: Readonly<Record<ArtifactStatus, readonly ArtifactStatus[]>> = {
  drafted: ['under_review', 'superseded'],
  under_review: ['accepted', 'rejected', 'revision_requested', 'superseded'],
  accepted: ['superseded'],
  rejected: ['superseded'],
  revision_requested: ['superseded'],
  superseded: [],
};

/** Every artifact status. */
export const ARTIFACT_STATUSES = Object.keys(ARTIFACT_TRANSITIONS) as ArtifactStatus[];

/** True when `from → to` is a legal status change. */
export function canChangeArtifactStatus(from: ArtifactStatus, to: ArtifactStatus): boolean {
  return ownValue(ARTIFACT_TRANSITIONS, from)?.includes(to) ?? false;
}

/** Throws `invalid_artifact_transition` naming the artifact and both statuses unless `from → to` is legal. */
export function assertArtifactStatusChange(
  artifactId: string,
  from: ArtifactStatus,
  to: ArtifactStatus,
): void {
  if (canChangeArtifactStatus(from, to)) return;
  const legal = ownValue(ARTIFACT_TRANSITIONS, from)?.join(', ') || 'none';
  throw new RoleboxError(
    'invalid_artifact_transition',
    `artifact ${artifactId} cannot go from ${from} to ${describeValue(to)} (from ${from}: ${legal})`,
    { artifactId, from, to },
  );
}
