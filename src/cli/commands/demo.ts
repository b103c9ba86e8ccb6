import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InspectorServer } from '../../../inspector/server.js';
import { CommandDispatcher } from '../../adapters/command-dispatcher.js';
import { defineFunction } from '../../function/definition.js';
import type { HostEvent } from '../../rolebox/host-events.js';
import { createRolebox, type Rolebox } from '../../rolebox/rolebox.js';
import { OK_EXIT_CODE } from '../exit-codes.js';
import {
  inspectorLog,
  portFallbackLine,
  startInspectorServerOnFreePort,
} from '../inspector-option.js';
import { type Output, untilInterrupted } from '../output.js';
import { createDemoPipeline } from './demo-pipeline.js';

/** Options of `rolebox demo`. */
export interface DemoOptions {
  /** Port of the inspector the demo starts (a free one when taken; 0 for any). */
  readonly port: number;
  /** Stream to an inspector already running here instead of starting one. */
  readonly inspect?: string;
  /** How long the built-in worker takes per round. */
  readonly roundSeconds: number;
  /** JSON lines on stdout instead of text (the shapes are in the README). */
  readonly json?: boolean;
}

/** How long the built-in worker of `rolebox demo` takes per round unless told otherwise. */
export const DEMO_ROUND_SECONDS = 3;

/** The session ids of the demo's three showcases. */
export const DEMO_SESSIONS = { approval: 'approval', loop: 'writer', review: 'review' } as const;

/** The approval workflow of the signal seed: wait for a human `answer`, escalate on `escalate`. */
const DEMO_FUNCTIONS = [
  defineFunction({
    name: 'awaiting-approval',
    description: 'Ask for approval, wait for a human answer, then finish.',
    gate: 'signal_observed(answer)',
    continue_until: 'signal_observed(answer)',
    observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
    transitions: [{ when: 'signal_observed(escalate)', activate: ['emergency-handler'] }],
  }),
  defineFunction({ name: 'emergency-handler', continue_until: 'signal_observed(answer)' }),
];

/**
 * The built-in worker: a shell command that takes a while (so there is something to
 * watch) and answers with a line naming its round. It reads the prompt like a real one.
 */
export function demoWorker(roundSeconds: number): string {
  return `cat > /dev/null; sleep ${roundSeconds}; printf 'round %s: drafted section %s of the release notes\\n' "$ROLEBOX_ROUND" "$ROLEBOX_ROUND"`;
}

/** One line of the demo's activity log for a host event, or nothing for the quiet ones. */
export function describeDemoEvent(event: HostEvent): string | undefined {
  switch (event.type) {
    case 'signal':
      return `${event.sessionId}: signal ${event.receipt.type} recorded on ${event.receipt.recordedOn} function(s)`;
    case 'idle':
      return `${event.sessionId}: idle → completed [${event.report.completed.join(', ')}], gated [${event.report.gated.join(', ')}]`;
    case 'function_activated':
      return `${event.sessionId}: ${event.function} activated (${event.by})`;
    case 'function_completed':
      return `${event.sessionId}: ${event.function} complete`;
    case 'effect':
      return `${event.sessionId}: effect ${JSON.stringify(event.effect)}`;
    case 'note':
      return `${event.sessionId}: ${event.text}`;
    case 'loop_started':
      return `${event.sessionId}: loop ${event.loopId} started`;
    case 'round_started':
      return `${event.sessionId}: round ${event.round} running (task ${event.taskId})`;
    case 'loop_finished':
      return `${event.sessionId}: loop ${event.loopId} ${event.phase}`;
    case 'artifact_written':
      return `${event.sessionId}: artifact ${event.name} written (${event.artifactId})`;
    case 'inspector_command':
      return `${event.sessionId}: from the inspector → ${event.actor} ${JSON.stringify(event.command)}${
        event.refused === undefined ? '' : ` refused: ${event.refused}`
      }`;
    case 'error':
      return `error: ${event.error.message}`;
    default:
      return undefined;
  }
}

/**
 * Opens the three showcases: an approval function gated on a human `answer`, a
 * three-round loop run by the built-in worker, and a session waiting for its artifact's
 * review. Returns: what to tell the user about each.
 */
export async function openDemoSessions(
  rb: Rolebox,
): Promise<{ readonly session: string; readonly hint: string }[]> {
  const approval = await rb.openSession({ id: DEMO_SESSIONS.approval });
  approval.activate('awaiting-approval');
  approval.tool('|signal| type=need_approval, payload={"reason": "deploys to production"}');
  approval.idle();

  const writer = await rb.openSession({ id: DEMO_SESSIONS.loop });
  writer.startLoop('|loop:3| draft the release notes, one section per round');

  const review = await rb.openSession({ id: DEMO_SESSIONS.review });
  review.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
  });
  review.send({ type: 'user_submitted_input', text: 'A haiku about autumn' });
  review.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet' },
  });
  review.send({ type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' });
  const draft = review.artifacts.write({
    name: 'haiku',
    workerId: 'poet',
    content: 'Leaves let go, unasked',
  });
  review.send({ type: 'worker_completed', artifactId: draft.id, assessment: 'five-seven-five' });

  return [
    {
      session: DEMO_SESSIONS.approval,
      hint: `fn:${DEMO_SESSIONS.approval}:awaiting-approval is gated until someone sends it \`answer\` (\`escalate\` activates emergency-handler)`,
    },
    {
      session: DEMO_SESSIONS.loop,
      hint: 'loop of 3 rounds by the built-in worker; `stop loop` on the loop cancels it',
    },
    {
      session: DEMO_SESSIONS.review,
      hint: `session:${DEMO_SESSIONS.review} waits in review_artifact; send user_accepted_artifact {"artifactId": "${draft.id}"}`,
    },
  ];
}

/**
 * `rolebox demo`: a showcase system with the inspector on, running until Ctrl-C.
 * Returns the exit code.
 */
export async function runDemoCommand(options: DemoOptions, output: Output): Promise<number> {
  const tasks = mkdtempSync(join(tmpdir(), 'rolebox-demo-'));
  let server: InspectorServer | undefined;
  let portInUse: number | undefined;
  let rb: Rolebox | undefined;
  // From here on a signal stops it cleanly (the temporary folder goes), even during start-up.
  const interrupted = untilInterrupted();
  let stopped = false;
  try {
    if (!options.inspect) {
      const started = await startInspectorServerOnFreePort(options.port, inspectorLog(output));
      server = started.server;
      portInUse = started.portInUse;
      if (portInUse !== undefined) output.err(portFallbackLine(started));
    }
    const url = options.inspect ?? (server as InspectorServer).wsUrl;
    rb = createRolebox({
      functions: DEMO_FUNCTIONS,
      dispatcher: new CommandDispatcher({
        command: demoWorker(options.roundSeconds),
        stateDir: tasks,
      }),
      limits: { interRoundDelayMs: 1000 },
      // Journaled so the page offers "fork here" on the sessions' events.
      journal: true,
      inspect: { url },
      // Its runs are drawn in the inspector's "Pipeline runs".
      pipeline: createDemoPipeline((session, text) =>
        options.json
          ? output.out(JSON.stringify({ type: 'event', event: 'pipeline', session, text }))
          : output.err(`» ${session}: ${text}`),
      ),
    });
    const demo = rb;
    demo.on('*', (event) => {
      const line = describeDemoEvent(event);
      if (!line) return;
      if (options.json)
        output.out(
          JSON.stringify({
            type: 'event',
            event: event.type,
            ...('sessionId' in event && event.sessionId !== undefined
              ? { session: event.sessionId }
              : {}),
            text: line,
          }),
        );
      else output.err(`» ${line}`);
    });
    // The demo plays the agent of the approval session: when a human sends it a signal
    // from the inspector, its turn ends (idle), so `answer` completes the function.
    demo.on('inspector_command', (event) => {
      if (
        event.sessionId === DEMO_SESSIONS.approval &&
        event.command.kind === 'signal' &&
        event.refused === undefined
      )
        demo.session(event.sessionId).idle();
    });
    await demo.start();
    if (options.json)
      output.out(
        JSON.stringify(
          server
            ? {
                type: 'listening',
                url: server.url,
                wsUrl: server.wsUrl,
                port: server.port,
                ...(portInUse === undefined ? {} : { portInUse }),
              }
            : { type: 'streaming', wsUrl: url },
        ),
      );
    else output.out(server ? `inspector: ${server.url}` : `streaming to the inspector at ${url}`);
    const showcases = await openDemoSessions(demo);
    for (const { session, hint } of showcases)
      output.out(
        options.json
          ? JSON.stringify({ type: 'showcase', session, hint })
          : `  ${`${session}:`.padEnd(10)}${hint}`,
      );
    if (!options.json) output.out('Ctrl-C to stop.');
    await interrupted;
    stopped = true;
    return OK_EXIT_CODE;
  } finally {
    await rb?.stop();
    await server?.stop();
    rmSync(tasks, { recursive: true, force: true });
    // Said once it is all gone, so a user who pressed Ctrl-C knows it took.
    if (stopped) output.err('» demo stopped: the inspector is closed and its sessions are gone');
  }
}
