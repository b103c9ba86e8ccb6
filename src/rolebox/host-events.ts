import type { LifecycleEvent } from '../runtime/session-runtime.js';
import type { EmittedEvent } from '../session/emitted.js';
import type { InspectorCommand } from './inspector-connection.js';

export type { IdleReport } from '../session/emitted.js';

/**
 * Events rolebox delivers to the host through `rb.on(type, handler)`: what the actor system
 * emitted, plus what only the facade knows (an error, a command from the inspector). They
 * are delivered after the command that caused them has been fully processed (an inspector
 * command's own event comes first).
 */
export type HostEvent =
  | EmittedEvent
  | LifecycleEvent
  | {
      /**
       * A command from the inspector page, delivered before what it caused (a fork once it
       * is made); `refused` says why the session refused it (then nothing changed).
       */
      readonly type: 'inspector_command';
      readonly sessionId: string;
      readonly actor: string;
      readonly command: InspectorCommand;
      readonly refused?: string;
    }
  | { readonly type: 'error'; readonly sessionId?: string; readonly error: Error };

/** The type names of {@link HostEvent}. */
export type HostEventType = HostEvent['type'];

/** The host event of a given type. */
export type HostEventOf<T extends HostEventType> = Extract<HostEvent, { type: T }>;
