/**
 * `rolebox/node`: what only runs in Node.js — the command dispatcher (worker rounds as child
 * processes with their state on disk) and reading function definitions from a folder. The root
 * entry `rolebox` imports no Node built-in, so it also bundles for browsers.
 *
 * @module rolebox/node
 */

export {
  CommandDispatcher,
  type CommandDispatcherOptions,
  DEFAULT_MAX_OUTPUT_BYTES,
  type DispatchPoint,
} from './adapters/command-dispatcher.js';
export { type LoadFunctionsOptions, loadFunctions } from './function/load.js';
