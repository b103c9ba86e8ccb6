// The inspector server's options: their defaults and the check that refuses one out of
// range before anything is started.

import { checkOptionNames } from '../src/base/option-names.js';
import { describeValue, RoleboxError } from '../src/errors.js';
import type { InspectorServerOptions } from './inspector-types.js';

/** The port an inspector listens on unless told otherwise. */
export const DEFAULT_INSPECTOR_PORT = 7070;

/** The defaults of {@link InspectorServerOptions}' bounds (documented in the README). */
export const INSPECTOR_DEFAULTS = {
  historyLimit: 2_000,
  actorLimit: 10_000,
  maxKeptBytes: 64 * 1024 * 1024,
  maxFrameBytes: 16 * 1024 * 1024,
  maxDepth: 64,
  pageBufferBytes: 8 * 1024 * 1024,
  commandTimeoutMs: 30_000,
  maxPendingCommands: 256,
} as const;

/** The bounds in effect (every one of {@link INSPECTOR_DEFAULTS}, as given or by default). */
export type Settings = Required<
  Pick<
    InspectorServerOptions,
    | 'historyLimit'
    | 'actorLimit'
    | 'maxKeptBytes'
    | 'maxFrameBytes'
    | 'maxDepth'
    | 'pageBufferBytes'
    | 'commandTimeoutMs'
    | 'maxPendingCommands'
  >
>;

/** Every option's name: an unknown one is refused (a typo must not pass silently). */
const INSPECTOR_OPTION_NAMES = Object.keys({
  port: true,
  host: true,
  token: true,
  appOrigins: true,
  historyLimit: true,
  actorLimit: true,
  maxKeptBytes: true,
  maxFrameBytes: true,
  maxDepth: true,
  pageBufferBytes: true,
  commandTimeoutMs: true,
  maxPendingCommands: true,
  clock: true,
  log: true,
} satisfies Record<keyof InspectorServerOptions, true>);

/** The bounds in effect; throws `invalid_argument` naming an option out of range. */
export function checkOptions(options: InspectorServerOptions): Settings {
  checkOptionNames(options, INSPECTOR_OPTION_NAMES, 'startInspectorServer options');
  const settings = { ...INSPECTOR_DEFAULTS } as Record<keyof Settings, number>;
  for (const key of Object.keys(INSPECTOR_DEFAULTS) as (keyof Settings)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RoleboxError(
        'invalid_argument',
        `inspector option ${key} must be a positive whole number, got ${describeValue(value)}`,
        { option: key, value },
      );
    settings[key] = value;
  }
  if (options.token !== undefined && !/^[\w-]{16,256}$/.test(String(options.token)))
    throw new RoleboxError(
      'invalid_argument',
      `inspector option token must be 16 to 256 characters of A-Z a-z 0-9 _ -, got ${typeof options.token === 'string' ? `${options.token.length} character(s)` : describeValue(options.token)}`,
      { option: 'token' },
    );
  for (const origin of options.appOrigins ?? []) {
    let parsed: string | undefined;
    try {
      parsed = new URL(String(origin)).origin;
    } catch {}
    if (parsed !== origin || parsed === 'null')
      throw new RoleboxError(
        'invalid_argument',
        `inspector option appOrigins must list origins like http://localhost:5173, got ${describeValue(origin)}`,
        { option: 'appOrigins', value: origin },
      );
  }
  return settings;
}
