import { randomUUID } from 'node:crypto';
import { checkSessionId } from '../base/actor-ids.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { ArtifactsHandle } from '../rolebox/artifacts-handle.js';
import {
  ARTIFACT_COMMAND_ROWS,
  type CommandRows,
  SESSION_COMMAND_ROWS,
  type ServedOnRestate,
} from '../rolebox/command-table.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import type { AcceptanceMode } from '../session/runtime-types.js';
import { SESSION_OBJECT_NAME, type StepAnswer } from './session-object.js';
import { errorOfFailedCall, type WireHostEvent } from './wire.js';

/** Options of {@link createRestateRolebox}. */
export interface RestateRoleboxOptions {
  /** The Restate ingress, e.g. `http://127.0.0.1:8080`. */
  readonly ingressUrl: string;
  /** The session object's name, when the endpoint was given another (default `rolebox-session`). */
  readonly objectName?: string;
  /** Headers sent with every call (an API key, say). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A handle method made async: same arguments, the same result, later. */
type Async<F> = F extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never;

/**
 * The methods of handle `T` whose rows in `R` a Restate handler serves, async: derived from
 * the command table, so a row added there is a method here.
 */
type Forwarded<T, R extends CommandRows> = {
  readonly [M in ServedOnRestate<R> & keyof T]: Async<T[M]>;
};

/** The session's artifacts through Restate: the embedded `session.artifacts`, async. */
export interface RestateArtifactsHandle
  extends Forwarded<ArtifactsHandle, typeof ARTIFACT_COMMAND_ROWS> {}

/** A session served on Restate: every method of the embedded SessionHandle, async. */
export type RestateSessionHandle = {
  readonly id: string;
  readonly artifacts: RestateArtifactsHandle;
} & Forwarded<SessionHandle, typeof SESSION_COMMAND_ROWS>;

/** A handler of the host events that this client's calls brought back. */
export type RestateEventHandler = (event: WireHostEvent) => void;

/**
 * Host code's side of rolebox on Restate: the embedded API over the ingress. Moving from
 * embedded to Restate is one line: `createRolebox(...)` becomes
 * `createRestateRolebox({ ingressUrl })`, and each session call gets an `await`.
 */
export class RestateRolebox {
  readonly #base: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #handlers = new Map<string, Set<RestateEventHandler>>();

  /** Internal: use {@link createRestateRolebox}. */
  constructor(options: RestateRoleboxOptions) {
    checkOptionNames(
      options,
      Object.keys({
        ingressUrl: true,
        objectName: true,
        headers: true,
      } satisfies Record<keyof RestateRoleboxOptions, true>),
      'createRestateRolebox options',
    );
    let url: URL;
    try {
      url = new URL(options.ingressUrl);
    } catch {
      throw new RoleboxError(
        'invalid_argument',
        `ingressUrl must be an http(s) URL, got ${describeValue(options.ingressUrl)}`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new RoleboxError(
        'invalid_argument',
        `ingressUrl must be an http(s) URL, got ${describeValue(options.ingressUrl)}`,
      );
    const objectName = options.objectName ?? SESSION_OBJECT_NAME;
    if (typeof objectName !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(objectName))
      throw new RoleboxError(
        'invalid_argument',
        `objectName must be a Restate service name, got ${describeValue(objectName)}`,
      );
    this.#base = `${url.href.replace(/\/$/, '')}/${objectName}`;
    this.#headers = { ...(options.headers ?? {}) };
  }

  /**
   * Opens a session (a new id unless `id` is given), or answers the one that exists with
   * that id: on Restate every session is stored, so opening is get-or-open.
   * Throws: `invalid_argument` for a bad id or option; `restate_failed` when the ingress fails.
   */
  async openSession(
    options: { readonly id?: string; readonly acceptanceMode?: AcceptanceMode } = {},
  ): Promise<RestateSessionHandle> {
    checkOptionNames(options, ['id', 'acceptanceMode'], 'openSession options');
    const id = options.id ?? `s_${randomUUID()}`;
    const session = this.session(id);
    await this.#call(id, 'open', [
      options.acceptanceMode ? { acceptanceMode: options.acceptanceMode } : {},
    ]);
    return session;
  }

  /** The handle of session `id` (no call is made until a method is). Throws: `invalid_argument` for a bad id. */
  session(id: string): RestateSessionHandle {
    checkSessionId(id);
    const call = (handler: string, args: readonly unknown[]) => this.#call(id, handler, args);
    return {
      id,
      ...forwarders<SessionHandle, typeof SESSION_COMMAND_ROWS>(SESSION_COMMAND_ROWS, call),
      artifacts: forwarders<ArtifactsHandle, typeof ARTIFACT_COMMAND_ROWS>(
        ARTIFACT_COMMAND_ROWS,
        call,
      ),
    };
  }

  /**
   * Subscribes to the host events the calls of this client bring back (`'*'` for all).
   * Events of steps nobody called (a worker's report, a deadline) go to the endpoint's
   * `eventSink`. Returns: unsubscribe.
   */
  on(type: WireHostEvent['type'] | '*', handler: RestateEventHandler): () => void {
    const set = this.#handlers.get(type) ?? new Set();
    set.add(handler);
    this.#handlers.set(type, set);
    return () => set.delete(handler);
  }

  async #call(id: string, handler: string, args: readonly unknown[]): Promise<unknown> {
    const what = `${handler} on session ${id}`;
    let response: Response;
    try {
      response = await fetch(`${this.#base}/${encodeURIComponent(id)}/${handler}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.#headers },
        body: JSON.stringify(trimmed(args)),
      });
    } catch (error) {
      throw new RoleboxError(
        'restate_failed',
        `${what}: the Restate ingress ${this.#base} cannot be reached (${(error as Error).message})`,
      );
    }
    const body = await response.text();
    if (!response.ok) throw errorOfFailedCall(response.status, body, what);
    const answer = JSON.parse(body) as StepAnswer;
    for (const event of answer.events) {
      for (const key of [event.type, '*'])
        for (const listener of this.#handlers.get(key) ?? []) listener(event);
    }
    return answer.result === null ? undefined : answer.result;
  }
}

/**
 * The one forwarder of the client: for every row a Restate handler serves, a method that
 * posts its arguments to that handler. The answer is the embedded method's result as the
 * object sent it; its type is the table's word for it, not checked again here.
 */
function forwarders<T, R extends CommandRows>(
  rows: R,
  call: (handler: string, args: readonly unknown[]) => Promise<unknown>,
): Forwarded<T, R> {
  const methods: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [method, row] of Object.entries(rows)) {
    const handler = row.restate;
    if (handler !== null) methods[method] = (...args) => call(handler, args);
  }
  return methods as Forwarded<T, R>;
}

/** Trailing `undefined` arguments dropped (JSON would turn them into null). */
function trimmed(args: readonly unknown[]): unknown[] {
  const list = [...args];
  while (list.length > 0 && list.at(-1) === undefined) list.pop();
  return list;
}

/** A client for rolebox sessions served on Restate (see {@link RestateRolebox}). Throws: `invalid_argument`. */
export function createRestateRolebox(options: RestateRoleboxOptions): RestateRolebox {
  return new RestateRolebox(options);
}
