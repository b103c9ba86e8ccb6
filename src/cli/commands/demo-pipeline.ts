import { PIPELINE_SOURCE_TYPES } from '../../pipeline/catalogue.js';
import { definePipelineTypes, definePolicy } from '../../pipeline/handlers.js';
import { createPipeline, type Pipeline } from '../../pipeline/pipeline.js';

/** The demo policy's signal: a round of the writer's loop drafted a section. */
export const DEMO_SECTION_DRAFTED = 'signal.release.section-drafted';
/** The demo policy's action: tell the user how far the release notes are. */
export const DEMO_ANNOUNCE = 'action.release.announce';

const t = definePipelineTypes<{
  signals: { [DEMO_SECTION_DRAFTED]: { sessionId: string; round: number; total: number } };
  actions: { [DEMO_ANNOUNCE]: { sessionId: string; text: string } };
}>();

/**
 * The pipeline of `rolebox demo`, so the inspector has runs to draw: each completed round of
 * a loop → `signal.release.section-drafted` → `action.release.announce`, whose side effect
 * is a line in the demo's activity log (`announce`).
 */
export function createDemoPipeline(announce: (sessionId: string, text: string) => void): Pipeline {
  return createPipeline({
    policies: [
      definePolicy('release-progress', [
        // Upstream: loop.round.completed. Downstream: signal.release.section-drafted.
        t.defineSourceHandler(
          PIPELINE_SOURCE_TYPES.loopRoundCompleted,
          'loop.round.completed:section-drafted',
          (source) => {
            const { sessionId, round, total, status } = source.payload;
            if (status !== 'completed') return undefined;
            const signal = t.createSignal({
              source,
              signalType: DEMO_SECTION_DRAFTED,
              payload: { sessionId, round, total },
            });
            return { status: 'dispatch', signals: [signal] };
          },
        ),
        // Upstream: signal.release.section-drafted. Downstream: action.release.announce.
        t.defineSignalHandler(
          DEMO_SECTION_DRAFTED,
          `${DEMO_SECTION_DRAFTED}:announce`,
          (signal) => {
            const { sessionId, round, total } = signal.payload;
            const action = t.createAction({
              signal,
              actionType: DEMO_ANNOUNCE,
              payload: {
                sessionId,
                text: `section ${round} of ${total} of the release notes drafted`,
              },
            });
            return { status: 'dispatch', actions: [action] };
          },
        ),
        // Upstream: action.release.announce. Downstream: signal.action.applied.
        t.defineActionHandler(DEMO_ANNOUNCE, `${DEMO_ANNOUNCE}:log`, (action, ctx) => {
          const startedAt = ctx.now();
          announce(action.payload.sessionId, `pipeline → ${action.payload.text}`);
          return {
            actionId: action.actionId,
            attempt: { current: 1, startedAt, completedAt: ctx.now(), status: 'succeeded' },
            status: 'applied',
            output: action.payload.text,
          };
        }),
      ]),
    ],
  });
}
