import type { HostEvent } from '../host-events.js';
import type { SessionCommand } from '../session/commands.js';

/** The context of the root system actor: the registry of live sessions. Plain JSON. */
export interface SystemContext {
  /** Live sessions by id; each is a child actor `session:<id>`. */
  readonly sessions: Readonly<Record<string, { readonly openedAt: number }>>;
}

/** Every event the system actor accepts. */
export type SystemEvent =
  | { readonly type: 'system.open_session'; readonly sessionId: string; readonly at: number }
  | { readonly type: 'system.close_session'; readonly sessionId: string; readonly at: number }
  | {
      readonly type: 'system.deliver';
      readonly sessionId: string;
      readonly command: SessionCommand;
    }
  | { readonly type: 'host'; readonly event: HostEvent };
