import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { type Chart, chartFromConfig } from '../../../inspector/chart.js';
import {
  activeChartStateIds,
  chartToMermaid,
  chartToSvg,
} from '../../../inspector/chart-export.js';
import { createShardMachine } from '../../../machines/shard.machine.js';
import { describeValue, RoleboxError } from '../../errors.js';
import { machinesFor } from '../../rolebox/build-machines.js';
import { resolveRoleboxOptions } from '../../rolebox/options.js';
import { OK_EXIT_CODE } from '../exit-codes.js';
import type { Output } from '../output.js';
import { readStoredSession } from './status.js';

/** The machines `rolebox chart` draws by name, root first. */
export const CHART_MACHINES = ['system', 'shard', 'session', 'function', 'loop'] as const;

/** One of {@link CHART_MACHINES}. */
export type ChartMachineName = (typeof CHART_MACHINES)[number];

/** The formats `rolebox chart` writes. */
export const CHART_FORMATS = ['mermaid', 'svg'] as const;

/** Options of `rolebox chart`. */
export interface ChartOptions {
  readonly format: string;
  readonly store: string;
  readonly out?: string;
  readonly json?: boolean;
}

/** The chart of a built-in machine, read from its config as the inspector reads an app's. */
export function machineChart(name: ChartMachineName): Chart {
  const machines = machinesFor(resolveRoleboxOptions({}));
  const machine = name === 'shard' ? createShardMachine(machines.session) : machines[name];
  const chart = chartFromConfig(JSON.stringify(machine.config));
  // The machines are ours: a config XState cannot rebuild is a bug here, not bad input.
  if (!chart) throw new Error(`the ${name} machine gives no chart`);
  return chart;
}

function isMachineName(name: string): name is ChartMachineName {
  return (CHART_MACHINES as readonly string[]).includes(name);
}

/**
 * What `rolebox chart` draws for `target`: a machine by name, else the session machine with
 * the stored session's state highlighted.
 * Throws: `invalid_argument` for a name that is no machine when there is no store;
 * `unknown_session` when the store holds no such session; `invalid_snapshot` when its
 * record cannot be read.
 */
export async function chartTarget(
  target: string,
  store: string,
): Promise<{ machine: ChartMachineName; session?: string; chart: Chart; active: string[] }> {
  if (isMachineName(target)) return { machine: target, chart: machineChart(target), active: [] };
  const machines = `machines: ${CHART_MACHINES.join(', ')}`;
  if (!existsSync(store))
    throw new RoleboxError(
      'invalid_argument',
      `${describeValue(target)} is no machine (${machines}), and there is no store at ${describeValue(store)} to find a session in`,
      { target, store },
    );
  let stored: Awaited<ReturnType<typeof readStoredSession>>;
  try {
    stored = await readStoredSession(store, target);
  } catch (error) {
    if (error instanceof RoleboxError && error.code === 'unknown_session')
      throw new RoleboxError(
        'unknown_session',
        `${describeValue(target)} is no machine (${machines}) and no session in ${describeValue(store)} (rolebox status lists them)`,
        { sessionId: target },
      );
    throw error;
  }
  const chart = machineChart('session');
  return {
    machine: 'session',
    session: target,
    chart,
    active: activeChartStateIds(chart, stored.value),
  };
}

/**
 * `rolebox chart <machine|session>`: a machine's statechart (a session's with its current
 * state highlighted) as Mermaid text or SVG, on stdout or in `--out`. Returns the exit code.
 * Throws: `invalid_argument` for a format other than mermaid or svg or an `--out` that cannot
 * be written; as {@link chartTarget}.
 */
export async function runChartCommand(
  target: string,
  options: ChartOptions,
  output: Output,
): Promise<number> {
  const format = options.format;
  if (!(CHART_FORMATS as readonly string[]).includes(format))
    throw new RoleboxError(
      'invalid_argument',
      `--format must be ${CHART_FORMATS.join(' or ')}, got ${describeValue(format)}`,
      { format },
    );
  const { machine, session, chart, active } = await chartTarget(target, options.store);
  const text = format === 'svg' ? await chartToSvg(chart, active) : chartToMermaid(chart, active);
  if (options.out !== undefined)
    await writeFile(options.out, text).catch((error: NodeJS.ErrnoException) => {
      throw new RoleboxError(
        'invalid_argument',
        `--out ${describeValue(options.out)} cannot be written (${error.code ?? error.message})`,
        { out: options.out },
      );
    });
  if (options.json) {
    output.out(
      JSON.stringify({
        machine,
        ...(session === undefined ? {} : { session }),
        format,
        active,
        ...(options.out === undefined ? { text } : { out: options.out }),
      }),
    );
  } else if (options.out === undefined) output.out(text.trimEnd());
  else output.err(`» ${format} chart of ${session ?? machine} written to ${options.out}`);
  return OK_EXIT_CODE;
}
