import { formatReplayReport, readRunFile, replay } from '../../testing/replay.js';
import type { Output } from '../output.js';

/** `rolebox replay <file>`: 0 when every snapshot matches, 1 on a divergence. */
export async function runReplayCommand(file: string, output: Output): Promise<number> {
  const report = replay(await readRunFile(file));
  (report.ok ? output.out : output.err)(formatReplayReport(report));
  return report.ok ? 0 : 1;
}
