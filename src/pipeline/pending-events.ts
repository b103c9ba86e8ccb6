import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import type { PipelineSource } from './nodes.js';

/** Where an enqueued event is kept until its run finishes: `$pipeline:event:<runId>`. */
export const PENDING_EVENT_PREFIX = '$pipeline:event:';

/** The `format` of a stored pipeline event. */
export const PENDING_EVENT_FORMAT = 'rolebox.pipeline.event';

/** An enqueued event waiting for its run. */
export interface PendingEvent {
  readonly runId: string;
  /** Enqueue order across scopes; runs restart in this order. */
  readonly seq: number;
  readonly enqueuedAt: number;
  readonly source: PipelineSource;
}

/** The zod schema of a stored {@link PipelineSource}: its fields, checked one level deep. */
export const storedSourceSchema = z.object({
  sourceId: z.string().min(1),
  sourceType: z.string().min(1),
  chain: z.object({ rootSourceId: z.string().min(1), chainId: z.string().min(1) }).passthrough(),
  payload: z.record(z.string(), z.unknown()),
  scope: z.record(z.string(), z.unknown()).optional(),
  scopeKey: z.string().min(1),
  timestamp: z.number(),
});

/** The zod schema of a stored {@link PendingEvent} record. */
export const pendingEventRecordSchema = z.object({
  format: z.literal(PENDING_EVENT_FORMAT),
  version: z.literal(1),
  runId: z.string().min(1),
  seq: z.number().int().nonnegative(),
  enqueuedAt: z.number(),
  source: storedSourceSchema,
});

/**
 * The enqueued events, persisted through a SnapshotStore (it may be the rolebox's own:
 * session restore skips `$`-prefixed records) so a crash before they run loses none. A
 * record is written before `enqueue` answers and removed when its run has finished.
 */
export class PendingEventLog {
  readonly #store: SnapshotStore;
  #seq = 0;

  constructor(store: SnapshotStore) {
    this.#store = store;
  }

  /** Persists an event; resolves once the store has it. */
  async add(runId: string, source: PipelineSource, enqueuedAt: number): Promise<PendingEvent> {
    const event: PendingEvent = { runId, seq: this.#seq++, enqueuedAt, source };
    await this.#store.save([
      {
        id: `${PENDING_EVENT_PREFIX}${runId}`,
        data: JSON.stringify({ format: PENDING_EVENT_FORMAT, version: 1, ...event }),
      },
    ]);
    return event;
  }

  /** Forgets an event whose run has finished. */
  async remove(runId: string): Promise<void> {
    await this.#store.delete([`${PENDING_EVENT_PREFIX}${runId}`]);
  }

  /**
   * Every stored event in enqueue order. A record that cannot be read is reported (with an
   * `invalid_pipeline_record` error naming it) and left in the store untouched.
   */
  async load(): Promise<{ events: PendingEvent[]; failed: { id: string; error: RoleboxError }[] }> {
    const events: PendingEvent[] = [];
    const failed: { id: string; error: RoleboxError }[] = [];
    // Only the pipeline's records: start() costs the same however many sessions are stored.
    for (const record of await this.#store.loadByPrefix(PENDING_EVENT_PREFIX)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(record.data);
      } catch {
        failed.push({
          id: record.id,
          error: new RoleboxError(
            'invalid_pipeline_record',
            `stored pipeline event ${describeValue(record.id)} is not JSON`,
            { id: record.id },
          ),
        });
        continue;
      }
      const result = pendingEventRecordSchema.safeParse(parsed);
      if (!result.success) {
        const issue = result.error.issues[0];
        failed.push({
          id: record.id,
          error: new RoleboxError(
            'invalid_pipeline_record',
            `stored pipeline event ${describeValue(record.id)} is malformed: ${issue?.path.join('.') || '(record)'}: ${issue?.message}`,
            { id: record.id },
          ),
        });
        continue;
      }
      const { runId, seq, enqueuedAt, source } = result.data;
      events.push({ runId, seq, enqueuedAt, source: source as unknown as PipelineSource });
    }
    events.sort((a, b) => a.seq - b.seq);
    this.#seq = Math.max(this.#seq, ...events.map((event) => event.seq + 1));
    return { events, failed };
  }
}
