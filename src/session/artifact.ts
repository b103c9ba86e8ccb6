/** Lifecycle of an artifact (SPEC §4.1). Only `accepted` artifacts are facts downstream. */
export type ArtifactStatus =
  | 'drafted'
  | 'under_review'
  | 'accepted'
  | 'rejected'
  | 'revision_requested'
  | 'superseded';

/** One artifact of a session. Plain JSON. */
export interface ArtifactRecord {
  readonly id: string;
  readonly name: string;
  /** The worker that produced it; absent for artifacts captured from signal payloads. */
  readonly workerId?: string;
  readonly status: ArtifactStatus;
  readonly summary?: string;
  readonly content?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}
