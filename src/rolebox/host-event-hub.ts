import { describeValue, RoleboxError } from '../errors.js';
import type { HostEvent, HostEventOf, HostEventType } from './host-events.js';

/** A handler for host events of one type. */
export type HostEventHandler<T extends HostEventType> = (event: HostEventOf<T>) => void;

/**
 * The host's subscriptions to host events and their delivery. A handler that throws does
 * not stop the others: the failure is delivered as an `error` event, or thrown when nobody
 * handles errors (a failing error handler is always thrown).
 */
export class HostEventHub {
  readonly #handlers = new Map<string, Set<(event: HostEvent) => void>>();

  /**
   * Subscribes to host events of one type (or `'*'` for all).
   * Returns: a function that unsubscribes. Throws: `invalid_argument` for a non-function.
   */
  on(type: string, handler: (event: never) => void): () => void {
    if (typeof handler !== 'function') {
      throw new RoleboxError(
        'invalid_argument',
        `rb.on(${describeValue(type)}, handler) needs a function`,
        { type },
      );
    }
    const set = this.#handlers.get(type) ?? new Set();
    set.add(handler as (event: HostEvent) => void);
    this.#handlers.set(type, set);
    return () => set.delete(handler as (event: HostEvent) => void);
  }

  /** While {@link HostEventHub.announcing} runs its work: what it caused, delivered after. */
  #held: HostEvent[] | undefined;

  /**
   * Delivers an announcement before what `work` causes: the events delivered while it runs
   * are held and follow it (a command from the inspector is told before its effects, and a
   * handler of the announcement sees the command done). `announce` gets the error `work`
   * threw, if it did; that error then goes on. Returns what `work` returns.
   */
  announcing<T>(announce: (refusal: Error | undefined) => HostEvent, work: () => T): T {
    const outer = this.#held;
    const held: HostEvent[] = [];
    this.#held = held;
    let refusal: Error | undefined;
    try {
      return work();
    } catch (error) {
      refusal = toError(error);
      throw error;
    } finally {
      this.#held = outer;
      if (outer) outer.push(announce(refusal), ...held);
      else this.#deliverInTurn([announce(refusal), ...held]);
    }
  }

  /**
   * Delivers `events`; what their handlers cause (a handler that sends a command) follows
   * them rather than cutting in, batch after batch.
   */
  #deliverInTurn(events: HostEvent[]): void {
    let batch = events;
    while (batch.length > 0) {
      const caused: HostEvent[] = [];
      this.#held = caused;
      try {
        this.#deliverNow(batch);
      } finally {
        this.#held = undefined;
      }
      batch = caused;
    }
  }

  /** Calls every handler of each event's type, then the `'*'` ones, in order. */
  deliver(events: readonly HostEvent[]): void {
    if (this.#held) {
      this.#held.push(...events);
      return;
    }
    this.#deliverNow(events);
  }

  #deliverNow(events: readonly HostEvent[]): void {
    const failures: unknown[] = [];
    for (const event of events) {
      for (const handler of [
        ...(this.#handlers.get(event.type) ?? []),
        ...(this.#handlers.get('*') ?? []),
      ]) {
        try {
          handler(event);
        } catch (error) {
          if (event.type === 'error') throw error;
          failures.push(error);
        }
      }
    }
    for (const failure of failures) {
      if ((this.#handlers.get('error')?.size ?? 0) === 0) throw failure;
      this.deliver([{ type: 'error', error: toError(failure) }]);
    }
  }
}

/** `value` as an Error (what was thrown is not always one). */
export function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
