import type { LoopInput } from '../loop/machine-types.js';
import type { SignalArgs } from '../signal/schema.js';
import type { ArtifactStatus } from './artifact.js';
import type { ArtifactWrite } from './artifact-store.js';
import type { RuntimeEvent, TimedRuntimeEvent } from './runtime-types.js';

/**
 * The commands a host sends to one session (through the system actor). The facade
 * validates them before they are sent; `at` is the clock time of the command.
 */
export type SessionCommand =
  | { readonly type: 'session.activate'; readonly name: string; readonly at: number }
  | { readonly type: 'session.deactivate'; readonly name: string; readonly at: number }
  | {
      readonly type: 'session.signal';
      readonly signal: SignalArgs;
      readonly at: number;
      /**
       * Set by the host's own paths (`approve`, `reject`, a tool call held for approval),
       * never by an agent's `signal`: only then may it open or answer a host-only request.
       */
      readonly byHost?: true;
      /** The one live function it is for (a tool call's request), instead of every one. */
      readonly to?: string;
    }
  /**
   * The runtime's timers: the approval requests of live functions whose deadline came by
   * `at` expire (SPEC §9). Nothing is due: nothing happens.
   */
  | { readonly type: 'session.expire_requests'; readonly at: number }
  /**
   * The host moves an open request's deadline to `expiresAt` (`session.extendRequest`),
   * delivered to the function the request id names. Checked by the handle before it is sent.
   */
  | {
      readonly type: 'session.extend_request';
      readonly requestId: string;
      readonly expiresAt: number;
      readonly by?: string;
      readonly at: number;
    }
  | { readonly type: 'session.tool'; readonly tool: string; readonly at: number }
  | { readonly type: 'session.idle'; readonly at: number }
  | { readonly type: 'session.message'; readonly text: string; readonly at: number }
  | { readonly type: 'session.resume'; readonly name: string; readonly at: number }
  | {
      readonly type: 'session.kv_set';
      readonly name: string;
      readonly key: string;
      readonly value: unknown;
      readonly at: number;
    }
  | { readonly type: 'session.start_loop'; readonly loop: LoopInput }
  | { readonly type: 'session.stop_loop'; readonly now: boolean; readonly at: number }
  | {
      readonly type: 'session.tool_call';
      readonly name: string;
      readonly kind: 'loop' | 'boundary';
      readonly at: number;
    }
  | ({ readonly type: 'session.write_artifact' } & ArtifactWrite)
  | {
      readonly type: 'session.set_artifact_status';
      readonly id: string;
      readonly status: ArtifactStatus;
      readonly at: number;
    }
  | {
      readonly type: 'session.set_slot';
      readonly key: string;
      readonly value: unknown;
      readonly at: number;
    }
  /** Strict mode: a runtime event the phase does not allow sends the session to `error`. */
  | {
      readonly type: 'session.runtime_rejected';
      readonly event: RuntimeEvent;
      readonly reason: string;
      readonly at: number;
    }
  | EffectCommand
  | TimedRuntimeEvent;

/**
 * What the effect runner and `session.settleEffect` tell a session about an effect in its
 * outbox (named by id in the payload: event types stay a finite set).
 */
export type EffectCommand =
  /** A handler attempt starts: the effect is `running`, its attempts counted. */
  | {
      readonly type: 'session.effect_started';
      readonly effectId: string;
      readonly attempt: number;
      readonly at: number;
    }
  /**
   * A handler attempt threw: retried at `nextAttemptAt`, or, without one, the effect is
   * `failed` and the session gets `runtime_failed` with the reason.
   */
  | {
      readonly type: 'session.effect_attempt_failed';
      readonly effectId: string;
      readonly error: string;
      readonly nextAttemptAt?: number;
      readonly at: number;
    }
  /**
   * A handler returned: its events are recorded as the effect's result (saved before applied).
   * `attempt`: the attempt it returned from, when no `session.effect_started` announced it (a
   * handler that returned within a turn): counted and `effect_started` emitted in this step.
   * `apply`: the result is saved already (a save stored it in the entry before this step),
   * so it is applied in this step as well.
   */
  | {
      readonly type: 'session.effect_result';
      readonly effectId: string;
      readonly events: readonly RuntimeEvent[];
      readonly attempt?: number;
      readonly apply?: boolean;
      readonly at: number;
    }
  /** The recorded result is applied, in one step, and the effect settled. */
  | { readonly type: 'session.effect_apply'; readonly effectId: string; readonly at: number }
  /** Raised after a result's events: settles the effect, counting the events the session took. */
  | {
      readonly type: 'session.effect_applied';
      readonly effectId: string;
      readonly historyBefore: number;
      readonly expected: number;
      /** What settled it: `handler` (its recorded result) or `host` (`settleEffect` with events). */
      readonly by: string;
      readonly at: number;
    }
  /**
   * `session.settleEffect(id, …)`, or an effect delivered with no handler: settled with
   * these events applied (in one step), or failed with `error`, or just settled.
   */
  | {
      readonly type: 'session.settle_effect';
      readonly effectId: string;
      readonly by: 'host' | 'delivered' | 'handler';
      readonly events?: readonly RuntimeEvent[];
      readonly error?: string;
      readonly at: number;
    };

/**
 * A command for a session that comes from outside host code: a click in the inspector, or
 * the pipeline's `action.rolebox.send`. Plain JSON, so it can travel over a socket or sit
 * in a stored pipeline event.
 */
export type RemoteCommand =
  | { readonly kind: 'signal'; readonly type: string; readonly payload?: Record<string, unknown> }
  | { readonly kind: 'idle' }
  | { readonly kind: 'message'; readonly text: string }
  | { readonly kind: 'runtime'; readonly event: Record<string, unknown> }
  | { readonly kind: 'stop_loop' }
  /** `session.approve(requestId, { by, note, seenVersion })` (SPEC §9). */
  | {
      readonly kind: 'approve';
      readonly requestId: string;
      readonly by?: string;
      readonly note?: string;
      readonly seenVersion?: number;
    }
  /** `session.reject(requestId, { by, reason })` (SPEC §9). */
  | {
      readonly kind: 'reject';
      readonly requestId: string;
      readonly by?: string;
      readonly reason: string;
    };
