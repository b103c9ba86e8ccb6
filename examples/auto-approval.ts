// An auto-approval policy for the pipeline: when an agent asks for approval
// (need_approval) in a session the host deems eligible, answer it without a human.
//   agent.signal.emitted(need_approval)
//     → signal.approval.auto-eligible
//       → action.rolebox.send(approve <request id>)
//         → signal.action.applied, and the function waiting for `answer` opens.
// It approves by request id: never a request the agent opened after the one judged; and
// with the version the request opened on (`seenVersion`): if the function changed since
// (another signal, a tool observed, a slot set), the approval is refused (stale_approval).
import {
  definePipelineTypes,
  definePolicy,
  PIPELINE_ACTION_TYPES,
  PIPELINE_SOURCE_TYPES,
  type PipelinePolicy,
} from 'rolebox';

/** The policy's own signal: an approval request that may be answered automatically. */
export const AUTO_ELIGIBLE = 'signal.approval.auto-eligible';

// Handlers and builders typed by the policy's catalogue.
const t = definePipelineTypes<{
  signals: {
    [AUTO_ELIGIBLE]: { sessionId: string; requestId: string; seenVersion?: number; reason: string };
  };
}>();

/** Which approval requests the host lets through without a human. */
export interface AutoApprovalOptions {
  isEligible(request: { sessionId: string; payload: Readonly<Record<string, unknown>> }): boolean;
}

/** The policy: a source handler that judges, a signal handler that answers. */
export function createAutoApprovalPolicy(options: AutoApprovalOptions): PipelinePolicy {
  return definePolicy('auto-approval', [
    // Upstream: agent.signal.emitted. Downstream: signal.approval.auto-eligible.
    t.defineSourceHandler(
      PIPELINE_SOURCE_TYPES.agentSignalEmitted,
      'agent.signal.emitted:auto-approval-judge',
      (source) => {
        const { sessionId, signalType, payload, requests, versions } = source.payload;
        if (signalType !== 'need_approval' || requests.length === 0) return undefined;
        if (!options.isEligible({ sessionId, payload })) return undefined;
        const reason = typeof payload.reason === 'string' ? payload.reason : '';
        // One per request the signal opened (one per function it reached), each its own id.
        const signals = requests.map((requestId) =>
          t.createSignal({
            source,
            signalType: AUTO_ELIGIBLE,
            id: `${source.sourceId.replace(/^source:/, '')}/${AUTO_ELIGIBLE}/${requestId}`,
            payload: {
              sessionId,
              requestId,
              ...(versions[requestId] === undefined ? {} : { seenVersion: versions[requestId] }),
              reason,
            },
          }),
        );
        return { status: 'dispatch', signals };
      },
    ),
    // Upstream: signal.approval.auto-eligible. Downstream: action.rolebox.send.
    t.defineSignalHandler(AUTO_ELIGIBLE, 'signal.approval.auto-eligible:answer', (signal) => {
      const { sessionId, requestId, seenVersion } = signal.payload;
      const answer = t.createAction({
        signal,
        actionType: PIPELINE_ACTION_TYPES.roleboxSend,
        payload: {
          sessionId,
          command: {
            kind: 'approve',
            requestId,
            by: 'auto-approval',
            // What the policy judged; absent only when the request's function was gone.
            ...(seenVersion === undefined ? {} : { seenVersion }),
          },
        },
      });
      return { status: 'dispatch', actions: [answer] };
    }),
  ]);
}
