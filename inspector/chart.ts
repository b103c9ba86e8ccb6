import { createMachine } from 'xstate';

/** One state of a statechart, as the inspector page draws it. */
export interface ChartNode {
  /** The state node's id (`loop.dispatching.sending`). */
  readonly id: string;
  /** Its key in its parent (`sending`). */
  readonly key: string;
  /** The keys from the root (`['dispatching', 'sending']`); the root's is `[]`. */
  readonly path: readonly string[];
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** The key of the initial child, for compound states. */
  readonly initial?: string;
  readonly children: readonly ChartNode[];
}

/** One transition: event (and guard) from a state to a state. */
export interface ChartEdge {
  readonly id: string;
  readonly source: string;
  readonly target: string;
  /** The event type (`''` for an eventless transition). */
  readonly event: string;
  readonly guard?: string;
}

/** A statechart ready to lay out: nested states and every transition between them. */
export interface Chart {
  readonly root: ChartNode;
  readonly edges: readonly ChartEdge[];
}

/** The parts of XState's state nodes (and their plain `definition`) the chart is made of. */
interface ChartSource {
  readonly definition: {
    id: string;
    key: string;
    type: ChartNode['type'];
    initial?: { target?: unknown[] } | undefined;
    transitions: DefinitionTransition[];
  };
  readonly states: Record<string, ChartSource>;
  /** Eventless transitions: on the state node, not in its `definition`. */
  readonly always?: DefinitionTransition[] | undefined;
}

interface DefinitionTransition {
  eventType: string | null;
  guard?: unknown;
  target?: unknown[] | undefined;
}

/** A target as the definition gives it: `'#loop.finalizing'`, or a state node with an id. */
function targetId(target: unknown): string | undefined {
  if (typeof target === 'string') return target.replace(/^#/, '');
  const id = (target as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
}

function isPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A guard as the definition gives it: its name, or `{ type }`. */
function guardName(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard;
  const type = (guard as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type !== '' ? type : undefined;
}

/**
 * Turns the machine config an app reported (as JSON) into a chart. The config is rebuilt
 * into a machine by XState itself, so targets (`'.error'`, `'#loop.finalizing'`, siblings)
 * resolve exactly as they do at run time; its functions are gone, so guards and actions
 * are only names. Returns undefined for anything that is not a machine config, or that
 * XState cannot build (an app may send anything as its definition).
 */
export function chartFromConfig(configJson: string | undefined): Chart | undefined {
  if (!configJson) return undefined;
  try {
    return buildChart(configJson);
  } catch {
    // A config XState accepts at first may still throw while its nodes are walked (an
    // initial state that does not exist, a target that resolves nowhere).
    return undefined;
  }
}

function buildChart(configJson: string): Chart | undefined {
  let root: ChartSource;
  try {
    const config = JSON.parse(configJson) as Record<string, unknown>;
    if (
      typeof config !== 'object' ||
      config === null ||
      (!config.states && !config.on && !config.initial) ||
      (config.states !== undefined && !isPlainObject(config.states))
    )
      return undefined;
    root = createMachine(config as never).root as unknown as ChartSource;
  } catch {
    return undefined;
  }
  const edges: ChartEdge[] = [];
  const toNode = (node: ChartSource, path: readonly string[]): ChartNode => {
    const definition = node.definition;
    for (const transition of [...(definition.transitions ?? []), ...(node.always ?? [])]) {
      const guard = guardName(transition.guard);
      for (const target of transition.target ?? []) {
        const id = targetId(target);
        if (id === undefined) continue;
        edges.push({
          id: `e${edges.length}`,
          source: definition.id,
          target: id,
          event: transition.eventType ?? '',
          ...(guard ? { guard } : {}),
        });
      }
    }
    const initial = targetId(definition.initial?.target?.[0])?.split('.').at(-1);
    return {
      id: definition.id,
      key: definition.key,
      path,
      type: definition.type,
      ...(initial ? { initial } : {}),
      children: Object.entries(node.states ?? {}).map(([key, child]) =>
        toNode(child, [...path, key]),
      ),
    };
  };
  return { root: toNode(root, []), edges };
}
