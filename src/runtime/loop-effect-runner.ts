import { reachedAt } from '../base/reached-at.js';
import { describeValue } from '../errors.js';
import type { LoopDeadline, LoopEffect } from '../loop/effect-types.js';
import type { LoopAnswer } from '../loop/machine-types.js';
import type { Clock, TimerHandle } from '../ports/clock.js';
import type { DispatchedTask, Dispatcher, TaskStatus } from '../ports/dispatcher.js';

/** What the runner needs: the dispatcher and the clock it performs effects with, and where answers go. */
export interface LoopEffectRunnerDeps {
  /** Runs rounds; without one, `prepare` is answered with `loop.prepare_failed`. */
  readonly dispatcher: Dispatcher | undefined;
  readonly clock: Clock;
  /**
   * Delivers an answer to the loop of session `sessionId` on the command path (the rolebox
   * wires it to `CommandPath.answerLoop`, which activates a passivated session first);
   * dropped when the loop is gone.
   */
  answer(sessionId: string, loopId: string, answer: LoopAnswer): void;
}

/** A task watch: its task, whether its first report (the status check) is in, how to stop it. */
interface TaskWatch {
  readonly taskId: string;
  /** Settled once the watch has made its first report, or was stopped. */
  readonly checked: Settled;
  stop(): void;
}

/** An armed deadline: its due time, its timer, and whether it fired or was disarmed. */
interface ArmedDeadline {
  readonly at: number;
  readonly handle: TimerHandle;
  /** Settled once the deadline has been answered, or disarmed. */
  readonly over: Settled;
}

/**
 * Something that happens once (a first report, a deadline's end), awaited only by
 * {@link LoopEffectRunner.answered}: its promise is made only when asked for, since every
 * round arms a deadline and starts a watch that nobody awaits while the session stays live.
 */
class Settled {
  #done = false;
  #promise: Promise<void> | undefined;
  #resolve: (() => void) | undefined;

  /** Marks it settled (again: nothing more happens). */
  settle(): void {
    this.#done = true;
    this.#resolve?.();
  }

  /** Resolves once it is settled (at once when it is). */
  get promise(): Promise<void> {
    if (this.#done) return Promise.resolve();
    this.#promise ??= new Promise<void>((resolve) => {
      this.#resolve = resolve;
    });
    return this.#promise;
  }
}

/** What one loop has running out there: the task it watches, the deadlines it waits for. */
interface LoopWatches {
  /** The session the loop runs in (answers go there). */
  sessionId: string;
  watch?: TaskWatch;
  readonly deadlines: Map<LoopDeadline, ArmedDeadline>;
  /** One-shot effects in flight (by their identity), so that asking twice performs once. */
  readonly inFlight: Map<string, Promise<void>>;
}

const NO_DISPATCHER = 'this rolebox has no dispatcher; pass createRolebox({ dispatcher })';

/**
 * Performs loops' effects (DESIGN §7): the only code that touches the dispatcher and the
 * clock for a loop. A loop states everything it needs in its current state; `need` starts
 * what is new and stops what is no longer asked for (a task watch, a deadline), so calling
 * it again with the same needs — after a restart, on activation — changes nothing.
 * Every answer carries the clock time and names what it answers.
 */
export class LoopEffectRunner {
  readonly #deps: LoopEffectRunnerDeps;
  readonly #loops = new Map<string, LoopWatches>();
  #stopped = false;

  constructor(deps: LoopEffectRunnerDeps) {
    this.#deps = deps;
  }

  /**
   * The needs of loop `loopId` of session `sessionId` as of its current state: the full
   * set. An empty set forgets the loop.
   */
  need(sessionId: string, loopId: string, effects: readonly LoopEffect[]): void {
    if (this.#stopped) return;
    if (effects.length === 0) {
      this.drop(loopId);
      return;
    }
    const loop: LoopWatches = this.#loops.get(loopId) ?? {
      sessionId,
      deadlines: new Map(),
      inFlight: new Map(),
    };
    loop.sessionId = sessionId;
    this.#loops.set(loopId, loop);
    const watched = effects.find((effect) => effect.kind === 'watch_task');
    if (loop.watch && loop.watch.taskId !== watched?.taskId) {
      loop.watch.stop();
      delete loop.watch;
    }
    // (a Map's iteration survives deleting the entry it is at)
    for (const name of loop.deadlines.keys()) {
      if (!effects.some((effect) => effect.kind === 'arm_deadline' && effect.deadline === name))
        this.#disarm(loop, name);
    }
    for (const effect of effects) this.#perform(loopId, loop, effect);
  }

  /**
   * Stops everything the loop had running (it finished, or its session is passivated or
   * dropped); what is still in flight for it is not answered.
   */
  drop(loopId: string): void {
    const loop = this.#loops.get(loopId);
    if (!loop) return;
    loop.watch?.stop();
    for (const name of loop.deadlines.keys()) this.#disarm(loop, name);
    this.#loops.delete(loopId);
  }

  /**
   * Settles once loop `loopId` has had the answers its current needs give without waiting
   * on the world: each watched task's status check, each one-shot effect in flight, each
   * deadline due by `dueBy`. At once for a loop with nothing running here. What a session
   * activated for a wake-up must have handled before it may be passivated again (DESIGN §7):
   * the answers move the loop on; a wake-up for nothing (a task still running) moves nothing,
   * and this settles all the same.
   */
  answered(loopId: string, dueBy: number): Promise<void> {
    const loop = this.#loops.get(loopId);
    if (!loop) return Promise.resolve();
    const waits = [...loop.inFlight.values()];
    if (loop.watch) waits.push(loop.watch.checked.promise);
    for (const armed of loop.deadlines.values())
      if (armed.at <= dueBy) waits.push(armed.over.promise);
    return Promise.all(waits.map((wait) => wait.catch(() => {}))).then(() => {});
  }

  /** Stops every watch and timer; answers still in flight are dropped. */
  stop(): void {
    for (const loopId of [...this.#loops.keys()]) this.drop(loopId);
    this.#stopped = true;
  }

  /**
   * Answers the loop, unless it was dropped meanwhile (passivated, finished, or its session
   * dropped because another process owns it now): it asks again for what it needs when
   * activated.
   */
  #answer(loopId: string, loop: LoopWatches, event: LoopAnswer): void {
    if (!this.#stopped && this.#loops.get(loopId) === loop)
      this.#deps.answer(loop.sessionId, loopId, event);
  }

  /**
   * Runs a one-shot effect unless the same one is in flight, and answers with its result
   * (each effect turns a dispatcher's failure into its answer). It counts as in flight until
   * its answer has been delivered, so that a need the answer causes synchronously (the
   * command path performs a loop's new needs before it returns) does not perform it again;
   * an answer that cannot be delivered clears it all the same.
   */
  #once(loopId: string, loop: LoopWatches, id: string, run: () => Promise<LoopAnswer>): void {
    if (loop.inFlight.has(id)) return;
    const done = run().then(
      (event) => {
        try {
          this.#answer(loopId, loop, event);
        } finally {
          loop.inFlight.delete(id);
        }
      },
      (error: unknown) => {
        loop.inFlight.delete(id);
        throw error;
      },
    );
    loop.inFlight.set(id, done);
  }

  #perform(loopId: string, loop: LoopWatches, effect: LoopEffect): void {
    const { dispatcher, clock } = this.#deps;
    switch (effect.kind) {
      case 'prepare':
        // Answered on the next turn, as any I/O would be: a stop in the same tick still
        // finds the loop activating.
        this.#once(loopId, loop, 'prepare', async () =>
          dispatcher
            ? { type: 'loop.prepared', at: clock.now() }
            : { type: 'loop.prepare_failed', reason: NO_DISPATCHER, at: clock.now() },
        );
        return;
      case 'dispatch_round': {
        if (!dispatcher) return;
        const { key, round } = effect;
        this.#once(loopId, loop, `dispatch:${key}`, () =>
          attempt(() => dispatcher.dispatchRound(round, key)).then(
            (task): LoopAnswer =>
              isDispatchedTask(task)
                ? {
                    type: 'loop.round_dispatched',
                    key,
                    taskId: task.taskId,
                    workerSessionId: task.workerSessionId,
                    at: clock.now(),
                  }
                : {
                    type: 'loop.dispatch_failed',
                    key,
                    reason: `dispatchRound answered ${describeValue(task)}, not { taskId, workerSessionId } (strings)`,
                    at: clock.now(),
                  },
            (error): LoopAnswer => ({
              type: 'loop.dispatch_failed',
              key,
              reason: reasonOf(error),
              at: clock.now(),
            }),
          ),
        );
        return;
      }
      case 'watch_task': {
        if (!dispatcher || loop.watch?.taskId === effect.taskId) return;
        loop.watch = this.#watch(effect.taskId, dispatcher, (event) =>
          this.#answer(loopId, loop, event),
        );
        return;
      }
      case 'collect_result': {
        if (!dispatcher) return;
        const { taskId } = effect;
        this.#once(loopId, loop, `collect:${taskId}`, () =>
          attempt(() => dispatcher.getRoundResult(taskId)).then(
            (result): LoopAnswer => ({
              type: 'loop.result_collected',
              taskId,
              result,
              at: clock.now(),
            }),
            (error): LoopAnswer => ({
              type: 'loop.collect_failed',
              taskId,
              reason: reasonOf(error),
              at: clock.now(),
            }),
          ),
        );
        return;
      }
      case 'cancel_round': {
        if (!dispatcher) return;
        const { taskId } = effect;
        // Cancelled or not (a task that ended already, a dispatcher that failed), the loop
        // goes on closing: the answer is the same.
        this.#once(loopId, loop, `cancel:${taskId}`, () =>
          attempt(() => dispatcher.cancelRound(taskId)).then(
            (): LoopAnswer => ({ type: 'loop.worker_cancelled', taskId, at: clock.now() }),
            (): LoopAnswer => ({ type: 'loop.worker_cancelled', taskId, at: clock.now() }),
          ),
        );
        return;
      }
      case 'arm_deadline': {
        const armed = loop.deadlines.get(effect.deadline);
        if (armed?.at === effect.at) return;
        if (armed) this.#disarm(loop, effect.deadline);
        const { deadline, at } = effect;
        const over = new Settled();
        const handle = clock.setTimeout(
          () => {
            loop.deadlines.delete(deadline);
            over.settle();
            // The timer firing is the clock saying the deadline has come (reachedAt says why).
            this.#answer(loopId, loop, {
              type: 'loop.deadline_reached',
              deadline,
              at: reachedAt(at, clock.now()),
            });
          },
          Math.max(0, at - clock.now()),
        );
        loop.deadlines.set(deadline, { at, handle, over });
        return;
      }
    }
  }

  /**
   * Subscribes first, then asks: a task that ends in between is reported either way (the
   * loop ignores the second report). Asking is also what reconciles a restored loop. A
   * dispatcher that throws reports the task `unknown`, so the loop ends as interrupted.
   */
  #watch(taskId: string, dispatcher: Dispatcher, answer: (event: LoopAnswer) => void): TaskWatch {
    const { clock } = this.#deps;
    let active = true;
    const checked = new Settled();
    const report = (status: TaskStatus) => {
      if (active && status !== 'pending' && status !== 'running')
        answer({ type: 'loop.worker_terminated', taskId, status, at: clock.now() });
      checked.settle();
    };
    let unsubscribe = () => {};
    try {
      unsubscribe = dispatcher.onTerminated(taskId, report);
      dispatcher.getTaskStatus(taskId).then(report, () => report('unknown'));
    } catch {
      queueMicrotask(() => report('unknown'));
    }
    return {
      taskId,
      checked,
      stop: () => {
        active = false;
        unsubscribe();
        checked.settle();
      },
    };
  }

  #disarm(loop: LoopWatches, name: LoopDeadline): void {
    const armed = loop.deadlines.get(name);
    if (armed) {
      this.#deps.clock.clearTimeout(armed.handle);
      armed.over.settle();
    }
    loop.deadlines.delete(name);
  }
}

/**
 * Runs `operation`, a throw becoming a rejection (a dispatcher may throw before it is
 * async). A native promise is returned as it is: wrapping it in another would cost each
 * effect a promise and two turns of the microtask queue.
 */
function attempt<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Whether a dispatcher's answer to `dispatchRound` names its task and worker session. */
function isDispatchedTask(task: unknown): task is DispatchedTask {
  if (typeof task !== 'object' || task === null) return false;
  const { taskId, workerSessionId } = task as Partial<DispatchedTask>;
  return typeof taskId === 'string' && typeof workerSessionId === 'string';
}

/** Why an effect failed, as text. */
function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : describeValue(error);
}
