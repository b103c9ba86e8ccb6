import { crashPoint } from '../base/crash-point.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { StoredEffectResult } from '../persistence/effect-result-record.js';
import type { Clock, TimerHandle } from '../ports/clock.js';
import type { EffectCommand } from '../session/commands.js';
import type { EmittedEvent } from '../session/emitted.js';
import { parseRuntimeEvent } from '../session/runtime-event-schema.js';
import type { PendingEffect, RuntimeEvent, SessionEffect } from '../session/runtime-types.js';

/** How a handler that throws is retried: attempts in all, and the doubling delay between them. */
export interface EffectRetryPolicy {
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/** What a handler is called with besides its effect (`H` is the session handle type). */
export interface EffectRunContext<H> {
  readonly session: H;
  readonly signal: AbortSignal;
  readonly attempt: number;
  readonly idempotencyKey: string;
}

/** A handler as the runner calls it: what it returns is checked before it is recorded. */
export type RunnableHandler<H> = (
  effect: SessionEffect,
  ctx: EffectRunContext<H>,
) => unknown | Promise<unknown>;

/** What the runner needs of its rolebox. */
export interface SessionEffectRunnerDeps<H> {
  readonly clock: Clock;
  readonly retry: EffectRetryPolicy;
  /** The handler for an effect type, if the host gave one. */
  handlerFor(type: SessionEffect['type']): RunnableHandler<H> | undefined;
  /** The live session's outbox, or undefined when it is not live here. */
  pendingOf(sessionId: string): readonly PendingEffect[] | undefined;
  /** The session's handle (what handlers get as `ctx.session`). */
  handleOf(sessionId: string): H;
  /**
   * Why the session would refuse the events of effect `effectId`'s result now (what `send`
   * would throw for the first one refused), or undefined when it takes them all.
   */
  refusalOf(
    sessionId: string,
    effectId: string,
    events: readonly RuntimeEvent[],
  ): RoleboxError | undefined;
  /** Sends an outbox command to the live session (through the command path: saved, delivered). */
  send(sessionId: string, command: EffectCommand): void;
  /** Settles once everything changed so far is saved (at once without a store). */
  saved(): Promise<void>;
  /**
   * With a store: where a handler's result is saved before it is applied, and read back
   * after a restart. Absent without a store: nothing is saved.
   */
  readonly results?: {
    /** Resolves once the store has `result` as effect `effectId`'s. */
    save(sessionId: string, effectId: string, result: StoredEffectResult): Promise<void>;
    /**
     * The result of `effectId` stored apart from the session (by a process that died before
     * saving it applied), or undefined. Throws `invalid_snapshot` when what is stored is corrupt.
     */
    stored(sessionId: string, effectId: string): Promise<StoredEffectResult | undefined>;
  };
  /** Delivers a host event the runner makes itself (a redelivered `effect`). */
  deliver(event: EmittedEvent): void;
  /** Reports a failure nobody called for. */
  report(error: Error, sessionId: string): void;
}

/** One effect being worked on here: its abort, and (while waiting to retry) its timer. */
interface Work {
  readonly sessionId: string;
  readonly controller: AbortController;
  timer?: TimerHandle;
  /** Settles when the current step (an attempt, an apply) is over. */
  running?: Promise<void>;
  /** True while a handler called with this work's signal has not returned. */
  handlerRunning?: boolean;
}

/**
 * Runs a session's pending effects with the host's handlers (DESIGN §10), beside the
 * loop effect runner: the only code that calls a handler. An effect runs only once the
 * snapshot that recorded it is saved; its result is saved before it is applied (on its own,
 * or in the effect's entry of the session's save), then recorded and applied in one step by
 * the machine; a thrown error is retried with backoff on the clock, the next attempt kept in
 * the outbox (`nextAttemptAt`) so a wake-up finds it after a restart.
 * Effects with no handler are the host's: delivered as `effect` host events, and again
 * (`redelivered: true`) after every activation while they are pending. Everything it does
 * is asked again by {@link reconcile} (after each step, on activation), so asking twice
 * performs once.
 */
export class SessionEffectRunner<H> {
  readonly #deps: SessionEffectRunnerDeps<H>;
  readonly #work = new Map<string, Work>();
  /**
   * Effects pending when their session was activated here, to their sessions: only these
   * can have a result stored apart by another process (one that died before applying it);
   * an effect recorded since is ours alone (we hold the session's lease).
   */
  readonly #fromStore = new Map<string, string>();
  #stopped = false;

  constructor(deps: SessionEffectRunnerDeps<H>) {
    this.#deps = deps;
  }

  /** Whether an effect with a handler may run here (the rolebox has one for its type). */
  hasHandler(type: SessionEffect['type']): boolean {
    return this.#deps.handlerFor(type) !== undefined;
  }

  /**
   * Reacts to the host events of a step: new effects are run (or, with no handler and no
   * answer but delivery, settled as delivered), effects settled while running are aborted,
   * an activated session is reconciled (and its host effects redelivered), a passivated or
   * closed one forgotten.
   */
  observe(events: readonly { readonly type: string; readonly sessionId?: string }[]): void {
    if (this.#stopped) return;
    const touched = new Set<string>();
    for (const event of events) {
      const sessionId = event.sessionId;
      if (sessionId === undefined) continue;
      switch (event.type) {
        case 'effect':
        case 'effect_failed':
          touched.add(sessionId);
          break;
        case 'effect_settled':
          if ('effectId' in event && typeof event.effectId === 'string')
            this.#abort(event.effectId);
          break;
        case 'session_activated':
          this.reconcile(sessionId, true);
          break;
        case 'session_passivated':
          this.dropSession(sessionId);
          break;
      }
    }
    for (const sessionId of touched) this.reconcile(sessionId, false);
  }

  /**
   * Starts what session `sessionId`'s outbox needs as it stands: each pending effect with a
   * handler not already in hand here (at once, or at its retry time), each recorded result
   * not yet applied; with `activated`, the effects without a handler are delivered again.
   */
  reconcile(sessionId: string, activated: boolean): void {
    if (this.#stopped) return;
    const pending = this.#deps.pendingOf(sessionId);
    if (!pending) return;
    for (const entry of pending) {
      if (entry.status === 'failed') continue;
      if (activated && this.#deps.results && entry.result === undefined)
        this.#fromStore.set(entry.id, sessionId);
      const handled = entry.result !== undefined || this.hasHandler(entry.effect.type);
      if (!handled) {
        if (activated)
          this.#deps.deliver({
            type: 'effect',
            sessionId,
            effect: entry.effect,
            redelivered: true,
          });
        if (entry.effect.type === 'emit_message') this.#settleDelivered(sessionId, entry.id);
        continue;
      }
      if (this.#work.has(entry.id)) continue;
      const work: Work = { sessionId, controller: new AbortController() };
      this.#work.set(entry.id, work);
      const delay = Math.max(0, (entry.nextAttemptAt ?? 0) - this.#deps.clock.now());
      if (entry.result === undefined && delay > 0)
        work.timer = this.#deps.clock.setTimeout(() => {
          delete work.timer;
          this.#start(entry.id, work);
        }, delay);
      else this.#start(entry.id, work);
    }
  }

  /** Whether session `sessionId` has an effect in hand here (a handler running, a result being applied). */
  busy(sessionId: string): boolean {
    for (const work of this.#work.values())
      if (work.sessionId === sessionId && work.running !== undefined) return true;
    return false;
  }

  /** The earliest retry time among the session's effects with a handler (for its wake-up). */
  wakeUpAt(sessionId: string): number | undefined {
    let at: number | undefined;
    for (const entry of this.#deps.pendingOf(sessionId) ?? []) {
      if (entry.status === 'failed') continue;
      if (entry.result === undefined && !this.hasHandler(entry.effect.type)) continue;
      const due = entry.nextAttemptAt ?? this.#deps.clock.now();
      at = at === undefined ? due : Math.min(at, due);
    }
    return at;
  }

  /** Forgets a session's effects here (passivated, closed, dropped), aborting what runs. */
  dropSession(sessionId: string): void {
    for (const [effectId, work] of [...this.#work])
      if (work.sessionId === sessionId) this.#abort(effectId);
    for (const [effectId, owner] of [...this.#fromStore])
      if (owner === sessionId) this.#fromStore.delete(effectId);
  }

  /** Aborts every handler and retry timer: the rolebox stops. */
  stop(): void {
    for (const effectId of [...this.#work.keys()]) this.#abort(effectId);
    this.#stopped = true;
  }

  #abort(effectId: string): void {
    const work = this.#work.get(effectId);
    if (!work) return;
    this.#work.delete(effectId);
    if (work.timer !== undefined) this.#deps.clock.clearTimeout(work.timer);
    // Only a handler still running listens: once it returned (its result being applied,
    // which settles the effect) the abort, with the DOMException it builds, is wasted.
    if (work.handlerRunning) work.controller.abort();
  }

  /** The live entry `effectId` of the session, if it is still pending and this work is current. */
  #current(effectId: string, work: Work): PendingEffect | undefined {
    if (this.#stopped || this.#work.get(effectId) !== work || work.controller.signal.aborted)
      return undefined;
    return this.#deps.pendingOf(work.sessionId)?.find((entry) => entry.id === effectId);
  }

  #start(effectId: string, work: Work): void {
    this.#track(effectId, work, this.#step(effectId, work));
  }

  /** Holds `step` as the work's current one: its failure reported, the work let go when it ends. */
  #track(effectId: string, work: Work, step: Promise<void>): void {
    work.running = step
      .catch((error: unknown) =>
        this.#deps.report(
          error instanceof Error ? error : new Error(String(error)),
          work.sessionId,
        ),
      )
      .finally(() => {
        if (this.#work.get(effectId) === work) this.#work.delete(effectId);
      });
  }

  /** One step of an effect: apply its recorded result, or run its handler once. */
  async #step(effectId: string, work: Work): Promise<void> {
    // Nothing runs before the snapshot that recorded the effect (or its result) is saved.
    await this.#deps.saved();
    const entry = this.#current(effectId, work);
    if (!entry || entry.status === 'failed') return;
    if (entry.result !== undefined) {
      this.#deps.send(work.sessionId, { type: 'session.effect_apply', effectId, at: this.#now() });
      return;
    }
    crashPoint('effect-saved');
    const handler = this.#deps.handlerFor(entry.effect.type);
    if (!handler) return;
    // A result stored by a process that died before saving it applied: applied now, and
    // the handler is not called again.
    if (await this.#appliedStored(effectId, work)) return;
    const attempt = entry.attempts + 1;
    const announce = this.#announcer(effectId, work, attempt);
    let events: RuntimeEvent[];
    work.handlerRunning = true;
    try {
      // Called now (a throw is a failed attempt like a rejection): the crash point below
      // is reached with the handler's work under way.
      const running = new Promise<unknown>((resolve) =>
        resolve(
          handler(entry.effect, {
            session: this.#deps.handleOf(work.sessionId),
            signal: work.controller.signal,
            attempt,
            idempotencyKey: effectId,
          }),
        ),
      );
      announce.whileRunning(running);
      crashPoint('effect-running');
      events = checkedEvents(await running);
      // Checked as `send` checks a host's events, before the result is recorded: a result
      // the session would refuse is never recorded (and so never applied, half or whole); it
      // is a failed attempt like a throw, retried (the session may have moved on, or the
      // handler may answer otherwise) and, after the last, fails the effect with its code.
      // The check sees the session as it is now: an event a host sends between this step
      // and the apply may still make the machine skip one (`effect_settled`'s `skipped`).
      if (this.#current(effectId, work)) {
        const refusal = this.#deps.refusalOf(work.sessionId, effectId, events);
        if (refusal) throw refusal;
      }
    } catch (error) {
      work.handlerRunning = false;
      if (!this.#current(effectId, work)) return;
      announce.now();
      this.#failed(effectId, work, attempt, error);
      return;
    }
    work.handlerRunning = false;
    if (!this.#current(effectId, work)) return;
    if (events.length === 0) {
      announce.now();
      this.#deps.send(work.sessionId, {
        type: 'session.settle_effect',
        effectId,
        by: 'handler',
        at: this.#now(),
      });
      return;
    }
    // Saved before it is applied: a crash in between applies it on restart, and the
    // handler is not called again. Then the session records and applies it in one step.
    const result = { events, ...(announce.done() ? {} : { attempt }) };
    await this.#deps.results?.save(work.sessionId, effectId, result);
    crashPoint('effect-result-saved');
    if (!this.#current(effectId, work)) return;
    this.#applyResult(effectId, work, result);
  }

  /** Records and applies `result` as `effectId`'s, in one step. */
  #applyResult(effectId: string, work: Work, result: StoredEffectResult): void {
    this.#deps.send(work.sessionId, {
      type: 'session.effect_result',
      effectId,
      events: result.events,
      ...(result.attempt === undefined ? {} : { attempt: result.attempt }),
      apply: true,
      at: this.#now(),
    });
  }

  /**
   * Applies the result of `effectId` stored apart from the session, if a process that died
   * stored one; true when it did (or the effect is gone meanwhile). A corrupt one is reported
   * and nothing of it is applied: the effect waits out a retry's backoff (no handler attempt
   * is counted), and then its handler is called.
   */
  async #appliedStored(effectId: string, work: Work): Promise<boolean> {
    const { results } = this.#deps;
    // Only an effect pending when its session was activated here can have one.
    if (!results || !this.#fromStore.delete(effectId)) return false;
    let stored: StoredEffectResult | undefined;
    try {
      stored = await results.stored(work.sessionId, effectId);
    } catch (error) {
      const entry = this.#current(effectId, work);
      if (!entry) return true;
      this.#deps.report(error instanceof Error ? error : new Error(String(error)), work.sessionId);
      this.#failed(effectId, work, entry.attempts + 1, error);
      return true;
    }
    if (!stored) return false;
    if (!this.#current(effectId, work)) return true;
    this.#applyResult(effectId, work, stored);
    return true;
  }

  /**
   * Announces attempt `attempt` of `effectId` (`session.effect_started`: the effect is
   * `running`, the attempt counted, `effect_started` emitted) once: when its handler is still
   * running a turn of the event loop after it was called (so the debounced save stores the
   * counted attempt while it runs, as a crash then finds it), or before a failure or an empty
   * result is sent. A handler that returns sooner (an instant model, a cache) is announced by
   * its result's step instead (`attempt` on `session.effect_result`): one step fewer.
   */
  #announcer(effectId: string, work: Work, attempt: number) {
    let announced = false;
    let returned = false;
    const now = () => {
      if (announced || !this.#current(effectId, work)) return;
      announced = true;
      this.#deps.send(work.sessionId, {
        type: 'session.effect_started',
        effectId,
        attempt,
        at: this.#now(),
      });
    };
    return {
      now,
      done: () => announced,
      whileRunning: (running: Promise<unknown>) => {
        const over = () => {
          returned = true;
        };
        running.then(over, over);
        setImmediate(() => {
          if (!returned) now();
        });
      },
    };
  }

  /** A failed attempt: retried after a backoff, or, after the last one, the effect fails. */
  #failed(effectId: string, work: Work, attempt: number, error: unknown): void {
    const { retry } = this.#deps;
    // A RoleboxError keeps its code, so the outbox says which rule refused the attempt.
    const reason =
      error instanceof RoleboxError
        ? `${error.code}: ${error.message}`
        : error instanceof Error
          ? error.message
          : describeValue(error);
    const last = attempt >= retry.maxAttempts;
    const delay = Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** (attempt - 1));
    this.#work.delete(effectId);
    this.#deps.send(work.sessionId, {
      type: 'session.effect_attempt_failed',
      effectId,
      error: reason,
      ...(last ? {} : { nextAttemptAt: this.#now() + delay }),
      at: this.#now(),
    });
  }

  #settleDelivered(sessionId: string, effectId: string): void {
    if (this.#work.has(effectId)) return;
    const work: Work = { sessionId, controller: new AbortController() };
    this.#work.set(effectId, work);
    this.#track(
      effectId,
      work,
      this.#deps.saved().then(() => {
        if (this.#current(effectId, work))
          this.#deps.send(sessionId, {
            type: 'session.settle_effect',
            effectId,
            by: 'delivered',
            at: this.#now(),
          });
      }),
    );
  }

  #now(): number {
    return this.#deps.clock.now();
  }
}

/**
 * A handler's return checked as runtime events are (zod, per type): nothing, or an array of
 * them. Throws a `RoleboxError` (`invalid_event` / `invalid_argument`) otherwise, which
 * counts as a failed attempt (here, and in the Restate effect service).
 */
export function checkedEvents(returned: unknown): RuntimeEvent[] {
  if (returned === undefined || returned === null) return [];
  if (!Array.isArray(returned))
    throw new RoleboxError(
      'invalid_argument',
      `an effect handler must return an array of runtime events or nothing, got ${describeValue(returned)}`,
      { got: describeValue(returned) },
    );
  return returned.map((event) => parseRuntimeEvent(event));
}
