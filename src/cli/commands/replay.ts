import { formatReplayReport, readRunFile, replay } from '../../testing/replay.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE } from '../exit-codes.js';
import type { Output } from '../output.js';

/**
 * `rolebox replay <file>`: 0 when every snapshot matches, 1 on a divergence. With `json`,
 * the report (`{ ok, replayed, total, divergence? }`) as one JSON document on stdout.
 */
export async function runReplayCommand(
  file: string,
  options: { readonly json?: boolean },
  output: Output,
): Promise<number> {
  const report = replay(await readRunFile(file));
  if (options.json) output.out(JSON.stringify(report, null, 2));
  else (report.ok ? output.out : output.err)(formatReplayReport(report));
  return report.ok ? OK_EXIT_CODE : FAILURE_EXIT_CODE;
}
