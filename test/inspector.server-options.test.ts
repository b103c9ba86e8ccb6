// The inspector's options on their own: defaults, and a refusal naming the value.
import { describe, expect, it } from 'vitest';
import { checkOptions, INSPECTOR_DEFAULTS } from '../inspector/server-options.js';
import { isRoleboxError } from '../src/index.js';

function refusal(options: Record<string, unknown>) {
  try {
    checkOptions(options);
  } catch (error) {
    return error;
  }
  throw new Error('accepted');
}

describe('the inspector options', () => {
  it('takes the defaults, and a given bound over its default', () => {
    expect(checkOptions({})).toEqual(INSPECTOR_DEFAULTS);
    expect(checkOptions({ historyLimit: 5 })).toEqual({ ...INSPECTOR_DEFAULTS, historyLimit: 5 });
  });

  it('refuses a bound that is not a positive whole number, naming it', () => {
    for (const value of [0, -1, 1.5, '10', Number.NaN]) {
      const error = refusal({ maxKeptBytes: value });
      expect(isRoleboxError(error) && error.code).toBe('invalid_argument');
      expect((error as Error).message).toMatch(
        /^inspector option maxKeptBytes must be a positive whole number, got /,
      );
    }
  });

  it('refuses a bad token, a bad origin and an unknown option name', () => {
    expect((refusal({ token: 'short' }) as Error).message).toMatch(
      /token must be 16 to 256 characters .*got 5 character\(s\)/,
    );
    expect((refusal({ appOrigins: ['http://x.test/path'] }) as Error).message).toMatch(
      /got "http:\/\/x\.test\/path"/,
    );
    expect((refusal({ prot: 1 }) as Error).message).toMatch(
      /unknown option "prot" \(did you mean "port"\?\)/,
    );
  });
});
