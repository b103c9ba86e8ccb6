import { describeValue, RoleboxError } from '../errors.js';
import type { PipelineHandler, PipelinePolicy } from './handlers.js';
import type { PipelineNodeKind } from './nodes.js';

/** A handler installed for one type, with the policy it came from. */
export interface InstalledHandler {
  readonly handler: PipelineHandler;
  readonly policyId: string;
}

/**
 * The handlers of a pipeline by kind and type, in installation order (policies in order,
 * each policy's handlers in order). A handler listening to N types is registered N times.
 */
export class HandlerRegistry {
  readonly #byType = new Map<string, InstalledHandler[]>();
  readonly #policies: string[] = [];

  /** Throws: `invalid_handler` for something that is not a policy, `duplicate_handler` for a handler id registered twice for one type. */
  constructor(policies: readonly PipelinePolicy[]) {
    if (!Array.isArray(policies)) {
      throw new RoleboxError(
        'invalid_handler',
        `policies must be a list, got ${describeValue(policies)}`,
      );
    }
    for (const policy of policies) this.#install(policy);
  }

  #install(policy: PipelinePolicy): void {
    if (typeof policy?.id !== 'string' || !Array.isArray(policy.handlers)) {
      throw new RoleboxError(
        'invalid_handler',
        `${describeValue(policy)} is not a policy (use definePolicy)`,
      );
    }
    this.#policies.push(policy.id);
    for (const handler of policy.handlers) {
      for (const type of handler.listen) {
        const key = `${handler.kind}\u0000${type}`;
        const list = this.#byType.get(key) ?? [];
        const clash = list.find((installed) => installed.handler.id === handler.id);
        if (clash) {
          throw new RoleboxError(
            'duplicate_handler',
            `${handler.kind} handler ${describeValue(handler.id)} is registered twice for ${describeValue(type)} (policies ${describeValue(clash.policyId)} and ${describeValue(policy.id)})`,
            { handlerId: handler.id, type },
          );
        }
        list.push({ handler, policyId: policy.id });
        this.#byType.set(key, list);
      }
    }
  }

  /** The handlers for a node of `kind` and `type`, in order. */
  handlersFor(kind: PipelineNodeKind, type: string): readonly InstalledHandler[] {
    return this.#byType.get(`${kind}\u0000${type}`) ?? [];
  }

  /** The installed policies' ids, in order. */
  policies(): readonly string[] {
    return this.#policies;
  }
}
