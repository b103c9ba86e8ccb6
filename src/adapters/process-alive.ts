import { readFileSync } from 'node:fs';
import { signalAlive } from '../base/host-process.js';

/**
 * True while the process runs. A zombie counts as dead: an orphaned worker whose group was
 * killed is reparented to PID 1, which in containers often never reaps it.
 */
export function isAlive(pid: number): boolean {
  if (!signalAlive(pid)) return false;
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may contain spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (not Linux): the signal check is all there is
  }
}
