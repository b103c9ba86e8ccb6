import type { InspectionEvent, Observer } from 'xstate';
import { nanoidIdSource } from '../adapters/id-sources.js';
import { realClock } from '../adapters/real-clock.js';
import { listed } from '../base/listed.js';
import { checkOptionNames } from '../base/option-names.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import { describeValue, RoleboxError } from '../errors.js';
import { FunctionCatalog } from '../function/catalog.js';
import type { FunctionDefinition } from '../function/definition.js';
import { type MigrationRegistry, noMigrations } from '../persistence/migrations.js';
import { Pipeline } from '../pipeline/pipeline.js';
import type { Clock } from '../ports/clock.js';
import type { Dispatcher } from '../ports/dispatcher.js';
import type { IdSource } from '../ports/ids.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import { checkSnapshotStore } from '../ports/store-contract.js';
import { type RoleboxLimits, resolveLimits } from '../system/limits.js';
import { DEFAULT_SHARDS } from '../system/shards.js';
import {
  checkEffectHandlers,
  type EffectHandlers,
  type EffectRetry,
  type EffectRetryOptions,
  resolveEffectRetry,
} from './effect-handlers.js';

/**
 * Where Stately's browser inspector is shown (`inspect: { stately: … }`), as
 * `createBrowserInspector` of @statelyai/inspect takes it.
 */
export interface StatelyInspectOptions {
  /** The inspector page to open (default Stately's hosted one, https://stately.ai/inspect). */
  readonly url?: string;
  /** An `<iframe>` element to show the inspector in, instead of a new window. */
  readonly iframe?: object;
  /**
   * Frames kept until the inspector page says it is connected, the oldest dropped beyond it
   * (default 5 000: the frames of a busy first moment, before the page is ready; Stately's own
   * default of 200 could lose the root's).
   */
  readonly maxDeferredEvents?: number;
  /**
   * In Node: serve Stately viewers on this port instead (`createWebSocketReceiver({ server:
   * 'ws://127.0.0.1:<port>' })` of @statelyai/inspect, or a person at `http://127.0.0.1:<port>`,
   * who sees `url` in a frame). A viewer that joins late is told every live actor first.
   */
  readonly port?: number;
  /** With `port`: the address to listen on (default 127.0.0.1). */
  readonly host?: string;
}

/**
 * Inspection: an XState inspection observer (function or object); `{ url }` to stream to
 * an inspector server speaking the @statelyai/inspect WebSocket protocol (rolebox's own
 * `rolebox inspect`, which can also send events back); or `'stately'` (Stately's hosted page)
 * or `{ stately: { url, iframe } }` for Stately's browser inspector (in a browser only), or
 * `{ stately: { port } }` to serve Stately viewers from Node.
 */
export type InspectOption =
  | ((event: InspectionEvent) => void)
  | Observer<InspectionEvent>
  | { readonly url: string }
  | { readonly stately: StatelyInspectOptions }
  | 'stately';

/** Options of `createRolebox`. */
export interface RoleboxOptions {
  /** The functions sessions can activate (from `defineFunction` or `loadFunctions`). */
  readonly functions?: readonly FunctionDefinition[];
  /** The condition registry the definitions were checked against (default: the process-wide one). */
  readonly conditions?: ConditionRegistry;
  /** Time source (default: the real clock). Tests pass a `SimulatedClock`. */
  readonly clock?: Clock;
  /** Id source (default: nanoid). Tests and replays pass `seededIdSource()`. */
  readonly ids?: IdSource;
  /** Overrides of the default limits. */
  readonly limits?: Partial<RoleboxLimits>;
  /** An XState inspection observer; inspection is off when absent. */
  readonly inspect?: InspectOption;
  /** Runs loop rounds as worker tasks; loops cannot start without one. */
  readonly dispatcher?: Dispatcher;
  /**
   * The seed's behaviour for runtime events a phase does not allow: the session moves to
   * `error` instead of the event being refused with a RoleboxError (default false).
   */
  readonly strictSessions?: boolean;
  /**
   * Where sessions are persisted (e.g. `new SqliteSnapshotStore('.rolebox/state.db')`).
   * With a store, `start()` restores every stored session and every change is saved.
   */
  readonly store?: SnapshotStore;
  /** How long changes are collected before they are written (default 200 ms). */
  readonly saveDebounceMs?: number;
  /** Migrations for records written by older versions. */
  readonly migrations?: MigrationRegistry;
  /** Record every event that enters the system from outside, for `rb.recordRun()` and replay. */
  readonly journal?: boolean;
  /**
   * A background pipeline (`createPipeline`) to feed with the system's facts (agent signals,
   * completed functions, rounds and loops, phase and artifact changes) and to let drive the
   * sessions through `action.rolebox.send`. `start()` starts it (running events enqueued
   * before a restart), `stop()` stops it.
   */
  readonly pipeline?: Pipeline;
  /**
   * With a store: a live session with no command for this long is passivated (saved,
   * stopped, dropped from memory; it comes back on its next use). Default 300 000 (5 min);
   * `Infinity` keeps sessions live.
   */
  readonly idleMs?: number;
  /**
   * With a store: above this many live sessions, the least recently used are passivated
   * (default 10 000). A session just activated is not passivated before its loop has had
   * what it was activated for (its worker's status, a deadline that has come; at most
   * 30 s), so the count may exceed this briefly rather than undo work.
   */
  readonly maxLiveSessions?: number;
  /**
   * With a store that answers at once (`immediate`, as the built-in ones do): a session left
   * waiting for a human (in `waiting_user`, or with a gated function) is passivated as soon
   * as the step that left it so is saved, rather than after `idleMs` (default true). Its
   * answer activates it again, through the same handle. Nothing is passivated while its
   * loop runs or one of its effect handlers runs.
   */
  readonly passivateWhenWaiting?: boolean;
  /** Shard actors under the root; sessions are spread over them by a hash of their id (default 256, `DEFAULT_SHARDS`). */
  readonly shards?: number;
  /** With a store: how long this process's claim on a session lasts unless renewed (default 30 000). */
  readonly leaseMs?: number;
  /**
   * Effect handlers, one optional per effect type: the runtime runs every pending effect
   * that has one (after the step that emitted it is saved), retries it when it throws, and
   * applies the events it returns once. Effects without one go to the host as `effect` events.
   */
  readonly effects?: EffectHandlers;
  /** How a handler that throws is retried (default 5 attempts, 1 s doubling up to 60 s). */
  readonly effectRetry?: EffectRetryOptions;
}

/** The options of one rolebox, checked and with their defaults filled in. */
export interface ResolvedOptions {
  readonly catalog: FunctionCatalog;
  readonly conditions: ConditionRegistry;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly limits: RoleboxLimits;
  readonly inspect: InspectOption | undefined;
  readonly dispatcher: Dispatcher | undefined;
  readonly strictSessions: boolean;
  readonly store: SnapshotStore | undefined;
  readonly saveDebounceMs: number;
  readonly migrations: MigrationRegistry;
  readonly journal: boolean;
  readonly pipeline: Pipeline | undefined;
  readonly idleMs: number;
  readonly maxLiveSessions: number;
  readonly passivateWhenWaiting: boolean;
  readonly shards: number;
  readonly leaseMs: number;
  readonly effects: EffectHandlers;
  readonly effectRetry: EffectRetry;
}

/** Every option name of `createRolebox` (an unknown one is refused, not ignored). */
export const ROLEBOX_OPTION_NAMES: readonly string[] = Object.keys({
  functions: true,
  conditions: true,
  clock: true,
  ids: true,
  limits: true,
  inspect: true,
  dispatcher: true,
  strictSessions: true,
  store: true,
  saveDebounceMs: true,
  migrations: true,
  journal: true,
  pipeline: true,
  idleMs: true,
  maxLiveSessions: true,
  passivateWhenWaiting: true,
  shards: true,
  leaseMs: true,
  effects: true,
  effectRetry: true,
} satisfies Record<keyof RoleboxOptions, true>);

/**
 * Checks every option of `createRolebox` and fills in the defaults.
 * Throws: `invalid_argument` naming the option and what it got, or an unknown option name
 * (with the one likely meant and the known ones); `invalid_function_definition` for
 * definitions that do not form a set.
 */
export function resolveRoleboxOptions(options: RoleboxOptions): ResolvedOptions {
  checkOptionNames(options, ROLEBOX_OPTION_NAMES, 'createRolebox options');
  if (options.functions !== undefined && !Array.isArray(options.functions)) {
    throw new RoleboxError(
      'invalid_argument',
      `functions must be an array of definitions, got ${describeValue(options.functions)}`,
    );
  }
  for (const [name, value, methods] of [
    ['conditions', options.conditions, CONDITION_REGISTRY_METHODS],
    ['clock', options.clock, CLOCK_METHODS],
    ['ids', options.ids, ID_SOURCE_METHODS],
    ['migrations', options.migrations, MIGRATION_METHODS],
    ['dispatcher', options.dispatcher, DISPATCHER_METHODS],
  ] as const) {
    if (value !== undefined && !hasMethods(value, methods)) {
      throw new RoleboxError(
        'invalid_argument',
        `${name} must implement ${listed(methods)}, got ${describeValue(value)}`,
        { option: name },
      );
    }
  }
  // The store's shape is checked once, here, with what changed since the 0.1 port.
  if (options.store !== undefined) checkSnapshotStore(options.store);
  if (options.pipeline !== undefined && !(options.pipeline instanceof Pipeline)) {
    throw new RoleboxError(
      'invalid_argument',
      `pipeline must be created with createPipeline(), got ${describeValue(options.pipeline)}`,
    );
  }
  for (const name of ['strictSessions', 'journal', 'passivateWhenWaiting'] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== 'boolean')
      throw new RoleboxError(
        'invalid_argument',
        `${name} must be true or false, got ${describeValue(value)}`,
        { option: name },
      );
  }
  const saveDebounceMs = options.saveDebounceMs ?? 200;
  if (!Number.isInteger(saveDebounceMs) || saveDebounceMs < 0) {
    throw new RoleboxError(
      'invalid_argument',
      `saveDebounceMs must be a whole number of milliseconds, got ${describeValue(saveDebounceMs)}`,
    );
  }
  const idleMs = options.idleMs ?? 300_000;
  if (!(idleMs === Number.POSITIVE_INFINITY || (Number.isInteger(idleMs) && idleMs > 0))) {
    throw new RoleboxError(
      'invalid_argument',
      `idleMs must be a whole number of milliseconds above 0, or Infinity, got ${describeValue(idleMs)}`,
    );
  }
  const whole = (name: string, value: unknown, fallback: number, min: number): number => {
    const chosen = value ?? fallback;
    if (typeof chosen !== 'number' || !Number.isInteger(chosen) || chosen < min)
      throw new RoleboxError(
        'invalid_argument',
        `${name} must be a whole number of at least ${min}, got ${describeValue(chosen)}`,
      );
    return chosen;
  };
  return {
    idleMs,
    maxLiveSessions: whole('maxLiveSessions', options.maxLiveSessions, 10_000, 1),
    passivateWhenWaiting: options.passivateWhenWaiting !== false,
    shards: whole('shards', options.shards, DEFAULT_SHARDS, 1),
    leaseMs: whole('leaseMs', options.leaseMs, 30_000, 10),
    catalog: new FunctionCatalog(options.functions ?? [], options.conditions),
    conditions: options.conditions ?? defaultConditionRegistry,
    clock: options.clock ?? realClock,
    ids: options.ids ?? nanoidIdSource,
    limits: resolveLimits(options.limits),
    inspect: checkInspectOption(options.inspect),
    dispatcher: options.dispatcher,
    strictSessions: options.strictSessions === true,
    store: options.store,
    saveDebounceMs,
    migrations: options.migrations ?? noMigrations,
    journal: options.journal === true,
    pipeline: options.pipeline,
    effects: checkEffectHandlers(options.effects),
    effectRetry: resolveEffectRetry(options.effectRetry),
  };
}

const CONDITION_REGISTRY_METHODS = ['get', 'names'] as const;
const CLOCK_METHODS = ['now', 'setTimeout', 'clearTimeout'] as const;
const ID_SOURCE_METHODS = ['next'] as const;
const MIGRATION_METHODS = ['migrate'] as const;
const DISPATCHER_METHODS = [
  'dispatchRound',
  'getTaskStatus',
  'getRoundResult',
  'cancelRound',
  'onTerminated',
] as const;

function hasMethods(value: unknown, methods: readonly string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return methods.every((method) => typeof candidate[method] === 'function');
}

function checkInspectOption(option: unknown): InspectOption | undefined {
  if (option === undefined || typeof option === 'function')
    return option as InspectOption | undefined;
  if (option === 'stately') {
    checkInPage();
    return option;
  }
  if (typeof option === 'object' && option !== null) {
    if (Object.hasOwn(option, 'url')) {
      checkOptionNames(option, ['url'], 'createRolebox inspect');
      const url = (option as { url: unknown }).url;
      if (typeof url !== 'string' || !/^wss?:\/\//.test(url)) {
        throw new RoleboxError(
          'invalid_argument',
          `inspect.url must be a ws:// or wss:// URL, got ${describeValue(url)}`,
        );
      }
      return option as InspectOption;
    }
    if (Object.hasOwn(option, 'stately')) {
      const stately = (option as { stately: unknown }).stately;
      checkStatelyOptions(stately);
      if ((stately as StatelyInspectOptions).port === undefined) checkInPage();
      return option as InspectOption;
    }
    if (typeof (option as { next?: unknown }).next === 'function') return option as InspectOption;
  }
  throw new RoleboxError(
    'invalid_argument',
    `inspect must be an observer, { url }, 'stately' or { stately }, got ${describeValue(option)}`,
  );
}

function checkInPage(): void {
  if (typeof (globalThis as { window?: unknown }).window === 'undefined') {
    throw new RoleboxError(
      'invalid_argument',
      "inspect: 'stately' opens Stately's inspector in a browser; in Node use { stately: { port } } to serve Stately viewers, or { url } with `rolebox inspect`",
    );
  }
}

const STATELY_OPTION_NAMES = ['url', 'iframe', 'maxDeferredEvents', 'port', 'host'];

function checkStatelyOptions(value: unknown): void {
  const fail = (message: string): never => {
    throw new RoleboxError('invalid_argument', `inspect.stately${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail(` must be an object of ${STATELY_OPTION_NAMES.join(', ')}, got ${describeValue(value)}`);
  const options = value as Record<string, unknown>;
  for (const key of Object.keys(options))
    if (!STATELY_OPTION_NAMES.includes(key))
      fail(` has no option ${describeValue(key)} (it takes ${STATELY_OPTION_NAMES.join(', ')})`);
  const { url, iframe, maxDeferredEvents, port, host } = options;
  if (
    port !== undefined &&
    (!Number.isSafeInteger(port) || (port as number) < 1 || (port as number) > 65_535)
  )
    fail(`.port must be a port number from 1 to 65535, got ${describeValue(port)}`);
  if (host !== undefined && (typeof host !== 'string' || host === '' || port === undefined))
    fail(`.host must be an address, given with port, got ${describeValue(host)}`);
  if (port !== undefined && iframe !== undefined)
    fail('.iframe is for a page, .port for Node: give one of them');
  if (url !== undefined && (typeof url !== 'string' || !/^https?:\/\//.test(url)))
    fail(`.url must be an http:// or https:// URL, got ${describeValue(url)}`);
  if (
    iframe !== undefined &&
    (typeof iframe !== 'object' ||
      iframe === null ||
      typeof (iframe as { setAttribute?: unknown }).setAttribute !== 'function')
  )
    fail(`.iframe must be an <iframe> element, got ${describeValue(iframe)}`);
  if (
    maxDeferredEvents !== undefined &&
    (!Number.isSafeInteger(maxDeferredEvents) || (maxDeferredEvents as number) < 1)
  )
    fail(`.maxDeferredEvents must be a whole number ≥ 1, got ${describeValue(maxDeferredEvents)}`);
}
