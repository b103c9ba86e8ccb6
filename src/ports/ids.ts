/** Where rolebox gets new ids (sessions, tasks, records). Injectable so replays are exact. */
export interface IdSource {
  /** A new id, unique within this source; `prefix` is prepended when given. */
  next(prefix?: string): string;
}
