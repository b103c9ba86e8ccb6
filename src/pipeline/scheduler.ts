import type { Span } from '@opentelemetry/api';
import type { Clock } from '../ports/clock.js';
import { createResultSignal } from './builders.js';
import { createHandlerContext, type HandlerContext, type SourceWindow } from './context.js';
import type { GuardBackend } from './guard-backend.js';
import {
  nodeIdOf,
  nodeKindOf,
  nodeTypeOf,
  type PipelineAction,
  type PipelineNode,
  type PipelineNodeKind,
  type PipelineSignal,
  type PipelineSource,
} from './nodes.js';
import type { HandlerRegistry, InstalledHandler } from './registry.js';
import {
  type ExecutorResult,
  isExecutorResult,
  isTerminalResult,
  type RuntimeProcessorResult,
  type TerminalResult,
} from './results.js';
import type { PipelineTelemetry } from './telemetry.js';

/** How one handler call went. */
export interface HandlerCall {
  readonly handlerId: string;
  readonly policyId: string;
  readonly kind: 'source' | 'signal' | 'action';
  readonly nodeId: string;
  readonly nodeType: string;
  /** What it returned: no fan-out, a dispatch, a terminal status, an ExecutorResult, or a throw / an invalid result. */
  readonly outcome:
    | 'none'
    | 'dispatch'
    | 'wait'
    | 'schedule'
    | 'conclude'
    | 'executed'
    | 'threw'
    | 'invalid';
  readonly durationMs: number;
  readonly error?: string;
}

/** An action's result, as the scheduler recorded it. */
export interface ActionResultRecord {
  readonly actionId: string;
  readonly actionType: string;
  readonly handlerId: string;
  readonly result: ExecutorResult;
  readonly durationMs: number;
}

/** Something a handler got wrong; the run went on without it. */
export interface RunError {
  readonly handlerId: string;
  readonly nodeId: string;
  /** `handler_threw`, `executor_result_from_non_action`, `invalid_result`, `invalid_node`, `duplicate_node`, `duplicate_result`. */
  readonly code: string;
  readonly message: string;
}

/** Everything that happened in one run, kept for terminal results too. */
export interface ChainTrace {
  readonly chainId: string;
  readonly rootSourceId: string;
  readonly source: PipelineSource;
  /** The signals processed, in order (result signals included). */
  readonly signals: readonly PipelineSignal[];
  /** The actions processed, in order. */
  readonly actions: readonly PipelineAction[];
  readonly results: readonly ActionResultRecord[];
  readonly handlerCalls: readonly HandlerCall[];
  readonly errors: readonly RunError[];
  /** Nodes processed. */
  readonly steps: number;
  /** With `reason: 'max_steps'`: the node type processed most, the one that looped. */
  readonly loopedType?: string;
  /** Nodes left in the queue when the step limit stopped the run. */
  readonly dropped: number;
  readonly startedAt: number;
  readonly completedAt: number;
}

/** The outcome of a run. */
export interface PipelineRun {
  readonly runId: string;
  readonly scopeKey: string;
  readonly chainId: string;
  /** `completed` unless a handler returned a terminal result (the first one wins). */
  readonly status: 'completed' | 'wait' | 'schedule' | 'conclude';
  /** The concluded reason (`max_steps`, `timed_out`, …) or the terminal status. */
  readonly reason?: string;
  /** The terminal result itself. */
  readonly result?: TerminalResult;
  /** Which handler, on which node, returned it. */
  readonly terminalBy?: { readonly handlerId: string; readonly nodeId: string };
  readonly window?: SourceWindow;
  readonly trace: ChainTrace;
}

/** What the scheduler runs with. */
export interface SchedulerDeps {
  readonly registry: HandlerRegistry;
  readonly guards: GuardBackend;
  readonly clock: Clock;
  readonly telemetry: PipelineTelemetry;
  /** Nodes a run may process before it concludes with `max_steps`. */
  readonly maxSteps: number;
  /** How long a guard lane lives after its last touch. */
  readonly guardTtlMs: number;
}

/** The node being processed, with what its handlers share. */
interface NodeInRun {
  readonly node: PipelineNode;
  readonly kind: PipelineNodeKind;
  readonly nodeId: string;
  readonly nodeType: string;
  readonly ctx: HandlerContext;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

const NODE_FIELDS = {
  signal: ['signalId', 'signalType'],
  action: ['actionId', 'actionType'],
} as const;

/** True for a signal or action as the builders make it (id, type, chain, payload, time). */
function isBuiltNode(value: unknown, kind: 'signal' | 'action'): boolean {
  const node = value as Record<string, unknown> | null;
  const [idField, typeField] = NODE_FIELDS[kind];
  return (
    typeof node?.[idField] === 'string' &&
    typeof node[typeField] === 'string' &&
    typeof node.chain === 'object' &&
    node.chain !== null &&
    typeof node.payload === 'object' &&
    node.payload !== null &&
    typeof node.timestamp === 'number'
  );
}

/** The node type processed most often (ties: the one seen last). */
function mostFrequentType(types: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  let best: string | undefined;
  for (const type of types) {
    const count = (counts.get(type) ?? 0) + 1;
    counts.set(type, count);
    if (best === undefined || count >= (counts.get(best) ?? 0)) best = type;
  }
  return best;
}

/** One run's state while its chain drains: its queue, and what it recorded so far. */
interface ChainRun {
  readonly deps: SchedulerDeps;
  readonly chainSpan: Span;
  /** Nodes to process, in order (those before the run's head are done). */
  readonly queue: PipelineNode[];
  /** Every node id the run has had: a second node with one is dropped. */
  readonly seen: Set<string>;
  readonly results: ActionResultRecord[];
  readonly handlerCalls: HandlerCall[];
  readonly errors: RunError[];
  /** The first terminal result: the run's outcome (the queue still drains). */
  terminal: { result: TerminalResult; handlerId: string; nodeId: string } | undefined;
}

/** Queues a node a handler dispatched, unless the run already has one with its id. */
function enqueueNode(
  run: ChainRun,
  node: PipelineNode,
  by: InstalledHandler,
  from: PipelineNode,
): void {
  const id = nodeIdOf(node);
  if (run.seen.has(id)) {
    run.errors.push({
      handlerId: by.handler.id,
      nodeId: nodeIdOf(from),
      code: 'duplicate_node',
      message: `handler "${by.handler.id}" dispatched ${nodeKindOf(node)} "${id}", which this run already has; it was dropped`,
    });
    return;
  }
  run.seen.add(id);
  run.queue.push(node);
}

/** Queues the signals and actions a `dispatch` result lists; anything else is an error of the run. */
function applyDispatch(
  run: ChainRun,
  result: Extract<RuntimeProcessorResult, { status: 'dispatch' }>,
  by: InstalledHandler,
  from: PipelineNode,
): void {
  for (const [list, kind] of [
    [result.signals, 'signal'],
    [result.actions, 'action'],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      run.errors.push({
        handlerId: by.handler.id,
        nodeId: nodeIdOf(from),
        code: 'invalid_node',
        message: `handler "${by.handler.id}" dispatched ${kind}s that are not a list`,
      });
      continue;
    }
    for (const node of list) {
      if (isBuiltNode(node, kind)) enqueueNode(run, node, by, from);
      else
        run.errors.push({
          handlerId: by.handler.id,
          nodeId: nodeIdOf(from),
          code: 'invalid_node',
          message: `handler "${by.handler.id}" dispatched something that is not a built ${kind} (use create${kind === 'signal' ? 'Signal' : 'Action'}); it was dropped`,
        });
    }
  }
}

/**
 * Runs one handler on the current node and records what came of it: a call, a result, a
 * dispatch, a terminal result or an error. Never throws.
 */
async function runHandler(
  run: ChainRun,
  installed: InstalledHandler,
  current: NodeInRun,
): Promise<void> {
  const { clock, telemetry } = run.deps;
  const { handlerCalls, results, errors } = run;
  const { handler } = installed;
  const { node, kind, nodeId, nodeType, ctx } = current;
  const span = telemetry.startHandler(run.chainSpan, {
    'rolebox.pipeline.handler_id': handler.id,
    'rolebox.pipeline.node_kind': kind,
    'rolebox.pipeline.node_type': nodeType,
    'rolebox.pipeline.node_id': nodeId,
  });
  const started = clock.now();
  let returned: unknown;
  let thrown: unknown;
  let threw = false;
  try {
    returned = await (handler.handle as (node: PipelineNode, ctx: unknown) => unknown)(node, ctx);
  } catch (error) {
    threw = true;
    thrown = error;
  }
  const completedAt = clock.now();
  const durationMs = completedAt - started;
  const record = (outcome: HandlerCall['outcome'], error?: string) => {
    handlerCalls.push({
      handlerId: handler.id,
      policyId: installed.policyId,
      kind,
      nodeId,
      nodeType,
      outcome,
      durationMs,
      ...(error === undefined ? {} : { error }),
    });
    telemetry.handlerRun(
      handler.id,
      kind,
      outcome === 'threw' || outcome === 'invalid' ? 'error' : 'ok',
      durationMs,
    );
    telemetry.endSpan(span, error);
  };
  const recordExecution = (action: PipelineAction, result: ExecutorResult) => {
    if (results.some((existing) => existing.actionId === action.actionId)) {
      errors.push({
        handlerId: handler.id,
        nodeId,
        code: 'duplicate_result',
        message: `handler "${handler.id}" returned a second result for action "${action.actionId}"; only the first one counts`,
      });
      return;
    }
    results.push({
      actionId: action.actionId,
      actionType: action.actionType,
      handlerId: handler.id,
      result,
      durationMs,
    });
    telemetry.actionResult(action.actionType, result.status, durationMs);
    enqueueNode(run, createResultSignal(action, result, completedAt), installed, node);
  };

  if (threw) {
    const text = message(thrown);
    record('threw', text);
    if (kind === 'action') {
      // An action handler that throws still reports: a failed result, so the chain knows.
      recordExecution(node as PipelineAction, {
        actionId: (node as PipelineAction).actionId,
        attempt: { current: 1, startedAt: started, completedAt, status: 'failed' },
        status: 'failed',
        error: {
          code: 'HANDLER_THREW',
          message: text,
          cause:
            thrown instanceof Error
              ? { name: thrown.name, message: thrown.message }
              : String(thrown),
        },
      });
    } else {
      errors.push({
        handlerId: handler.id,
        nodeId,
        code: 'handler_threw',
        message: `${kind} handler "${handler.id}" threw on ${nodeId}: ${text}`,
      });
    }
    return;
  }
  if (returned === undefined || returned === null) return record('none');
  if (isExecutorResult(returned)) {
    if (kind !== 'action') {
      const text = `${kind} handler "${handler.id}" returned an ExecutorResult; only action handlers perform side effects (split it into a ${kind} handler and an action handler)`;
      errors.push({
        handlerId: handler.id,
        nodeId,
        code: 'executor_result_from_non_action',
        message: text,
      });
      return record('invalid', text);
    }
    record('executed');
    return recordExecution(node as PipelineAction, returned);
  }
  const status = (returned as { status?: unknown }).status;
  if (status === 'dispatch') {
    record('dispatch');
    return applyDispatch(
      run,
      returned as Extract<RuntimeProcessorResult, { status: 'dispatch' }>,
      installed,
      node,
    );
  }
  if (isTerminalResult(returned)) {
    record(returned.status);
    const reason =
      returned.status === 'conclude' && typeof returned.concluded?.reason === 'string'
        ? returned.concluded.reason
        : returned.status;
    telemetry.terminal(reason);
    if (!run.terminal) run.terminal = { result: returned, handlerId: handler.id, nodeId };
    return;
  }
  const text = `${kind} handler "${handler.id}" returned ${JSON.stringify(returned)?.slice(0, 80)}, which is not a handler result`;
  errors.push({ handlerId: handler.id, nodeId, code: 'invalid_result', message: text });
  record('invalid', text);
}

/**
 * Runs one source through its chain (SPEC-pipeline §4): a FIFO queue, breadth first; for
 * each node every handler registered for its type, in order, awaited. `dispatch` queues
 * signals then actions; an action handler's ExecutorResult becomes the built-in result
 * signal; the first terminal result is the run's outcome while the queue still drains. A
 * handler that throws never aborts the run, and past `maxSteps` nodes the run concludes
 * with `max_steps`.
 */
export async function runChain(
  source: PipelineSource,
  runId: string,
  deps: SchedulerDeps,
  window?: SourceWindow,
): Promise<PipelineRun> {
  const { registry, guards, clock, telemetry, maxSteps, guardTtlMs } = deps;
  const startedAt = clock.now();
  const signals: PipelineSignal[] = [];
  const actions: PipelineAction[] = [];
  const processedTypes: string[] = [];
  let maxStepsHit = false;
  let head = 0;
  const chainSpan = telemetry.startChain({
    'rolebox.pipeline.run_id': runId,
    'rolebox.pipeline.chain_id': source.chain.chainId,
    'rolebox.pipeline.scope_key': source.scopeKey,
    'rolebox.pipeline.source_type': source.sourceType,
  });
  const run: ChainRun = {
    deps,
    chainSpan,
    queue: [source],
    seen: new Set<string>([source.sourceId]),
    results: [],
    handlerCalls: [],
    errors: [],
    terminal: undefined,
  };
  const { queue, results, handlerCalls, errors } = run;

  while (head < queue.length) {
    if (processedTypes.length >= maxSteps) {
      maxStepsHit = true;
      break;
    }
    const node = queue[head++] as PipelineNode;
    const kind = nodeKindOf(node);
    const nodeType = nodeTypeOf(node);
    processedTypes.push(nodeType);
    if (kind === 'signal') signals.push(node as PipelineSignal);
    if (kind === 'action') actions.push(node as PipelineAction);
    telemetry.node(kind, nodeType);
    // One context per node: every handler of a node sees the same frozen time.
    const current: NodeInRun = {
      node,
      kind,
      nodeId: nodeIdOf(node),
      nodeType,
      ctx: createHandlerContext(source.scopeKey, node.timestamp, guards, guardTtlMs, window),
    };
    for (const installed of registry.handlersFor(kind, nodeType))
      await runHandler(run, installed, current);
  }

  const completedAt = clock.now();
  const loopedType = maxStepsHit ? mostFrequentType(processedTypes) : undefined;
  if (maxStepsHit) telemetry.terminal('max_steps');
  const final: Pick<PipelineRun, 'status' | 'reason' | 'result' | 'terminalBy'> = maxStepsHit
    ? {
        status: 'conclude',
        reason: 'max_steps',
        result: { status: 'conclude', concluded: { reason: 'max_steps', maxSteps, loopedType } },
      }
    : run.terminal
      ? {
          status: run.terminal.result.status,
          reason:
            run.terminal.result.status === 'conclude' &&
            typeof run.terminal.result.concluded?.reason === 'string'
              ? run.terminal.result.concluded.reason
              : run.terminal.result.status,
          result: run.terminal.result,
          terminalBy: { handlerId: run.terminal.handlerId, nodeId: run.terminal.nodeId },
        }
      : { status: 'completed' };
  telemetry.chain(final.status, completedAt - startedAt);
  telemetry.endSpan(chainSpan as Span, maxStepsHit ? `max_steps: ${loopedType} looped` : undefined);
  return {
    runId,
    scopeKey: source.scopeKey,
    chainId: source.chain.chainId,
    ...final,
    ...(window ? { window } : {}),
    trace: {
      chainId: source.chain.chainId,
      rootSourceId: source.chain.rootSourceId,
      source,
      signals,
      actions,
      results,
      handlerCalls,
      errors,
      steps: processedTypes.length,
      ...(loopedType ? { loopedType } : {}),
      dropped: queue.length - head,
      startedAt,
      completedAt,
    },
  };
}
