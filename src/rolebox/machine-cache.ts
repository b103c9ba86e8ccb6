import type { ConditionRegistry } from '../condition/registry.js';
import type { FunctionCatalog } from '../function/catalog.js';
import type { FunctionDefinition } from '../function/definition.js';
import type { RoleboxLimits } from '../system/limits.js';

/**
 * What the machines of a rolebox are built from and depend on: the machines read nothing
 * else (they do no I/O; the clock and the dispatcher serve the runtime around them).
 */
export interface MachineInputs {
  readonly catalog: FunctionCatalog;
  readonly conditions: ConditionRegistry;
  readonly limits: RoleboxLimits;
  readonly shards: number;
}

/** How many sets of machines one condition registry keeps (the most recently used). */
export const MACHINE_CACHE_SIZE = 32;

/**
 * Machines built once per process for each distinct set of inputs, so that a second
 * rolebox with the same functions, conditions, limits and shards (a fresh rolebox per
 * request) reuses them instead of building the XState machines again. Definitions and
 * limits count by content (a copy loaded again from the same files hits); the condition
 * registry by identity (its conditions are code). Bounded: each registry keeps the
 * {@link MACHINE_CACHE_SIZE} most recently used sets, and a registry no longer referenced
 * takes its sets with it.
 */
export class MachineCache<Machines> {
  readonly #byRegistry = new WeakMap<ConditionRegistry, Map<string, Machines>>();
  /** The content key of each definition object seen, so a reused object is not serialized again. */
  readonly #definitionKeys = new WeakMap<FunctionDefinition, string>();
  /** Definitions JSON cannot write (a cycle or a bigint among their extra keys) count by identity. */
  #unserializable = 0;

  constructor(readonly build: (inputs: MachineInputs) => Machines) {}

  /** The machines for `inputs`: the ones built before for equal inputs, or new ones. */
  machinesFor(inputs: MachineInputs): Machines {
    let sets = this.#byRegistry.get(inputs.conditions);
    if (!sets) {
      sets = new Map();
      this.#byRegistry.set(inputs.conditions, sets);
    }
    const key = this.#keyOf(inputs);
    const cached = sets.get(key);
    // Taken out and put back: a Map iterates in insertion order, so the first is the least
    // recently used.
    if (cached !== undefined) sets.delete(key);
    const machines = cached ?? this.build(inputs);
    sets.set(key, machines);
    if (sets.size > MACHINE_CACHE_SIZE) sets.delete(sets.keys().next().value as string);
    return machines;
  }

  #keyOf(inputs: MachineInputs): string {
    const definitions = inputs.catalog.definitions().map((one) => this.#definitionKey(one));
    return JSON.stringify([definitions, inputs.limits, inputs.shards]);
  }

  #definitionKey(definition: FunctionDefinition): string {
    let key = this.#definitionKeys.get(definition);
    if (key === undefined) {
      key = contentOf(definition) ?? `object ${++this.#unserializable}`;
      this.#definitionKeys.set(definition, key);
    }
    return key;
  }
}

/** The JSON of a definition, or undefined when it has none. */
function contentOf(definition: FunctionDefinition): string | undefined {
  try {
    return JSON.stringify(definition);
  } catch {
    return undefined;
  }
}
