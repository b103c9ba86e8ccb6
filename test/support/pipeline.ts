import {
  createPipeline,
  type PipelineOptions,
  type PipelinePolicy,
  type PipelineRun,
} from '../../src/pipeline/index.js';
import { SimulatedClock, seededIdSource } from '../../src/testing/index.js';

/** A pipeline on a simulated clock (at 1 000 000) and seeded ids. */
export function testPipeline(
  policies: readonly PipelinePolicy[],
  options: Omit<PipelineOptions, 'policies'> = {},
) {
  const clock = new SimulatedClock(1_000_000);
  const pipeline = createPipeline({ clock, ids: seededIdSource(7), ...options, policies });
  return { pipeline, clock };
}

/** The run, failing the test on a deduped answer. */
export function asRun(result: PipelineRun | { deduped: true }): PipelineRun {
  if ('deduped' in result) throw new Error('expected a run, got a duplicate');
  return result;
}
