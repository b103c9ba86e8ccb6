// Who "this process" is, without importing a Node built-in: the root entry also runs in
// browsers, where there is no process and every rolebox lives in the one page.

interface NodeProcessLike {
  readonly pid: number;
  readonly argv: readonly string[];
  kill(pid: number, signal: number): boolean;
  getBuiltinModule?: (name: string) => unknown;
  emitWarning(message: string, type: string): void;
}

function nodeProcess(): NodeProcessLike | undefined {
  const candidate = (globalThis as { process?: Partial<NodeProcessLike> }).process;
  return typeof candidate?.pid === 'number' ? (candidate as NodeProcessLike) : undefined;
}

/** This process's pid; 1 where there is no process (a browser page). */
export function currentPid(): number {
  return nodeProcess()?.pid ?? 1;
}

/**
 * This machine's host name, as `os.hostname()` gives it (through `process.getBuiltinModule`,
 * Node ≥ 20.16); `localhost` in a browser page, where no other host can share a store.
 */
export function currentHostName(): string {
  const os = nodeProcess()?.getBuiltinModule?.('node:os') as { hostname(): string } | undefined;
  return os?.hostname() ?? 'localhost';
}

/**
 * A Node built-in module (`node:http`, …) through `process.getBuiltinModule` (Node ≥ 20.16),
 * so that the root entry imports none; undefined in a browser page or an older Node.
 */
export function nodeBuiltin<T>(name: string): T | undefined {
  return nodeProcess()?.getBuiltinModule?.(name) as T | undefined;
}

/** The command line's arguments (`process.argv`), or none in a browser page. */
export function currentArgv(): readonly string[] {
  return nodeProcess()?.argv ?? [];
}

/**
 * True while process `pid` runs, as far as a signal 0 can tell (a zombie counts as alive
 * here; the Node adapter `isAlive` also reads /proc). In a page every owner is the page.
 */
export function signalAlive(pid: number): boolean {
  const node = nodeProcess();
  if (node === undefined) return true;
  try {
    node.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/** Warns the host: `process.emitWarning` as a RoleboxWarning, or `console.warn` in a page. */
export function warnHost(message: string): void {
  const node = nodeProcess();
  if (node !== undefined) node.emitWarning(message, 'RoleboxWarning');
  else console.warn(`RoleboxWarning: ${message}`);
}
