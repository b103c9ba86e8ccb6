/**
 * What tests (ours and our users') import from `rolebox/testing`.
 *
 * @module rolebox/testing
 */

export { seededIdSource } from '../adapters/id-sources.js';
export type { JournalEntry, RecordedRun } from '../persistence/journal.js';
export {
  type Divergence,
  formatReplayReport,
  type ReplayOptions,
  type ReplayReport,
  readRunFile,
  replay,
  writeRunFile,
} from './replay.js';
export {
  type ScriptedAnswer,
  ScriptedDispatcher,
  type ScriptedTask,
} from './scripted-dispatcher.js';
export { settle } from './settle.js';
export { SimulatedClock } from './simulated-clock.js';
