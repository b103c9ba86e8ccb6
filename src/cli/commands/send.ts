import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import type { FunctionDefinition } from '../../function/definition.js';
import { loadFunctions } from '../../function/load.js';
import { isTerminalLoopPhase } from '../../loop/types.js';
import { isForeignRecordId, SYSTEM_RECORD_ID } from '../../persistence/envelope.js';
import { createRolebox, type Rolebox } from '../../rolebox/rolebox.js';
import type { SessionHandle } from '../../rolebox/session-handle.js';
import { crashPoint } from '../crash-points.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE } from '../exit-codes.js';
import { LOOP_RUN_SLOT, loopRunIn, loopRunSlotValue } from '../loop-runs.js';
import { LoopWorkerDispatcher } from '../loop-worker-dispatcher.js';
import type { Output } from '../output.js';
import { ownSessionsStore } from '../own-sessions-store.js';
import { readSendArguments, type SendCommand, sendCommand } from '../send-commands.js';
import { openExistingStoreFile } from '../store-file.js';

/** Options of `rolebox send`. */
export interface SendOptions {
  readonly store: string;
  readonly functions?: string;
  readonly worker?: string;
  readonly tasks: string;
  readonly json?: boolean;
}

/**
 * `rolebox send <session> <command> [args...]`: runs one command or read of the command
 * table on a stored session and prints what it answered, once its effect is stored.
 * The arguments are read and checked before the store is opened, so a bad one changes
 * nothing. No stored loop is woken here (no wake-up is read): a loop started by this
 * command (given `--worker`) records its worker, and `rolebox resume` runs it.
 * Returns: 0, or 1 when the session answered a refusal (`{ ok: false }`, `{ allowed: false }`).
 * Throws: `invalid_argument` for an unknown command, a bad argument or no store;
 * `unknown_session` when the store holds no session `sessionId` (a closed one included);
 * whatever the method throws for a refused call (and then nothing was saved).
 */
export async function runSendCommand(
  sessionId: string,
  name: string,
  texts: readonly string[],
  options: SendOptions,
  output: Output,
): Promise<number> {
  const command = sendCommand(name);
  const args = readSendArguments(command, texts);
  const functions: FunctionDefinition[] = options.functions
    ? await loadFunctions(options.functions)
    : [];
  const sqlite = openExistingStoreFile(options.store);
  try {
    const stored =
      sessionId === SYSTEM_RECORD_ID || isForeignRecordId(sessionId)
        ? undefined
        : await sqlite.load(sessionId);
    if (stored === undefined)
      throw new RoleboxError(
        'unknown_session',
        `no session ${describeValue(sessionId)} in ${describeValue(options.store)} (rolebox status lists them; a closed session is gone)`,
        { sessionId },
      );
    const worker = options.worker;
    let session: SessionHandle | undefined;
    const dispatcher = worker
      ? new LoopWorkerDispatcher({
          stateDir: options.tasks,
          workerOf: (input) => loopRunIn(session?.view().slots, input.loopId)?.worker ?? worker,
        })
      : undefined;
    if (worker) dispatcher?.check(worker);
    // Drives no session's wake-ups: a stored loop goes on in `rolebox resume`, not here.
    const rb = createRolebox({
      store: ownSessionsStore(sqlite),
      functions,
      saveDebounceMs: 0,
      ...(dispatcher ? { dispatcher } : {}),
    });
    try {
      await rb.start();
      session = await openStored(rb, sessionId, options.functions !== undefined);
      const loopBefore = session.view().loop?.id;
      const result = call(session, command, args, worker);
      const loop = command.row.kind === 'command' ? session.view().loop : undefined;
      // A loop this command started: its rounds run the worker given, here and in `resume`.
      if (
        worker &&
        dispatcher &&
        loop &&
        loop.id !== loopBefore &&
        !isTerminalLoopPhase(loop.phase)
      ) {
        dispatcher.assign(loop.id, worker);
        session.setSlot(LOOP_RUN_SLOT, loopRunSlotValue({ loopId: loop.id, worker }));
      }
      // Nothing is printed ahead of the store.
      await rb.flush();
      crashPoint('send-saved');
      printResult(output, sessionId, command, result, options.json === true);
      if (loop && loop.id !== loopBefore && !isTerminalLoopPhase(loop.phase))
        output.err(`» loop ${loop.id} started; \`rolebox resume\` runs it`);
      return isRefusal(result) ? FAILURE_EXIT_CODE : OK_EXIT_CODE;
    } finally {
      await rb.stop();
    }
  } finally {
    await sqlite.close();
  }
}

/**
 * Activates the stored session `sessionId`. Throws: what `openSession` throws; a record
 * that cannot be restored without `--functions` says to pass it.
 */
async function openStored(
  rb: Rolebox,
  sessionId: string,
  withFunctions: boolean,
): Promise<SessionHandle> {
  try {
    return await rb.openSession({ id: sessionId });
  } catch (error) {
    if (withFunctions || !isRoleboxError(error, 'invalid_snapshot')) throw error;
    throw new RoleboxError(
      'invalid_snapshot',
      `${error.message}; pass --functions <dir> with the session's function definitions`,
      { sessionId },
    );
  }
}

/**
 * Calls the method of `command` on the session's handle for it. Throws: what the method
 * throws; `no_dispatcher` says to pass `--worker`.
 */
function call(
  session: SessionHandle,
  command: SendCommand,
  args: readonly unknown[],
  worker: string | undefined,
): unknown {
  const handle: object = command.surface === 'session' ? session : session.artifacts;
  const method = Reflect.get(handle, command.method) as (...args: unknown[]) => unknown;
  try {
    return method.apply(handle, [...args]);
  } catch (error) {
    if (worker === undefined && isRoleboxError(error, 'no_dispatcher'))
      throw new RoleboxError(
        'no_dispatcher',
        `send ${command.name}: a loop needs a worker; pass --worker "<command>" (${error.message})`,
      );
    throw error;
  }
}

/** A result in which the session refused what was asked without throwing (a loop it would not start). */
function isRefusal(result: unknown): boolean {
  if (typeof result !== 'object' || result === null) return false;
  const { ok, allowed } = result as { ok?: unknown; allowed?: unknown };
  return ok === false || allowed === false;
}

/** What a command answered: JSON text for a person, one JSON object with `--json`. */
function printResult(
  output: Output,
  sessionId: string,
  command: SendCommand,
  result: unknown,
  json: boolean,
): void {
  if (json) {
    output.out(
      JSON.stringify({ session: sessionId, command: command.name, result: result ?? null }),
    );
    return;
  }
  output.out(
    result === undefined
      ? `${command.name}: done (session ${sessionId})`
      : JSON.stringify(result, null, 2),
  );
}
