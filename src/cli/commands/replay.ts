import { addReplaySource } from '../../../inspector/replay-source.js';
import { DEFAULT_INSPECTOR_PORT } from '../../../inspector/server.js';
import { describeValue, RoleboxError } from '../../errors.js';
import { parseRecordedRun } from '../../persistence/journal.js';
import { formatReplayReport, readRunFile, replay } from '../../testing/replay.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE } from '../exit-codes.js';
import { DEFAULT_HOST } from '../options.js';
import { type Output, untilInterrupted } from '../output.js';
import { machineDefinitions, startCliInspector } from './inspect.js';

/** Options of `rolebox replay`. */
export interface ReplayCommandOptions {
  readonly json?: boolean;
  /** Play the run in an inspector page (until Ctrl-C) as well. */
  readonly inspect?: boolean;
  /** The inspector's port (only with `inspect`). */
  readonly port?: number;
  readonly host?: string;
}

/**
 * `rolebox replay <file>`: 0 when every snapshot matches, 1 on a divergence. With `json`,
 * the report (`{ ok, replayed, total, divergence? }`) as one JSON document on stdout. With
 * `inspect`, the run is also played in an inspector page (step, play, the divergence on the
 * chart) until Ctrl-C. Throws: `invalid_argument` for `--port` or `--host` without `--inspect`.
 */
export async function runReplayCommand(
  file: string,
  options: ReplayCommandOptions,
  output: Output,
): Promise<number> {
  for (const name of ['port', 'host'] as const)
    if (options[name] !== undefined && !options.inspect)
      throw new RoleboxError(
        'invalid_argument',
        `--${name} ${describeValue(options[name])} is for --inspect, which was not given`,
        { option: name },
      );
  const run = await readRunFile(file);
  const actuals = new Map<number, unknown>();
  const report = replay(
    run,
    options.inspect ? { onStep: (i, actual) => actuals.set(i, actual) } : {},
  );
  if (options.json) output.out(JSON.stringify(report, null, 2));
  else (report.ok ? output.out : output.err)(formatReplayReport(report));
  const code = report.ok ? OK_EXIT_CODE : FAILURE_EXIT_CODE;
  if (!options.inspect) return code;
  const parsed = parseRecordedRun(run, file);
  const server = await startCliInspector(
    { port: options.port ?? DEFAULT_INSPECTOR_PORT, host: options.host ?? DEFAULT_HOST },
    output,
  );
  addReplaySource(server, {
    name: `replay ${file}`,
    initial: parsed.initial,
    journal: parsed.journal.map((entry) => ({
      at: entry.at,
      target: entry.target,
      event: { type: String(entry.event.type) },
      after: entry.after,
    })),
    ...(report.divergence
      ? {
          divergence: {
            ...report.divergence,
            actual: actuals.get(report.divergence.index),
          },
        }
      : {}),
    definitions: machineDefinitions(),
  });
  output.out(`inspector: ${server.url}`);
  await untilInterrupted();
  await server.stop();
  return code;
}
