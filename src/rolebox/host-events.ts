import type { LifecycleEvent } from '../runtime/session-runtime.js';
import type { RemoteCommand } from '../session/commands.js';
import type { EmittedEvent } from '../session/emitted.js';

export type { IdleReport } from '../session/emitted.js';

/**
 * Events rolebox delivers to the host through `rb.on(type, handler)`: what the actor system
 * emitted, plus what only the facade knows (an error, a command from the inspector). They
 * are delivered after the command that caused them has been fully processed.
 */
export type HostEvent =
  | EmittedEvent
  | LifecycleEvent
  | {
      readonly type: 'inspector_command';
      readonly sessionId: string;
      readonly actor: string;
      readonly command: RemoteCommand;
    }
  | { readonly type: 'error'; readonly sessionId?: string; readonly error: Error };

/** The type names of {@link HostEvent}. */
export type HostEventType = HostEvent['type'];

/** The host event of a given type. */
export type HostEventOf<T extends HostEventType> = Extract<HostEvent, { type: T }>;
