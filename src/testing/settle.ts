/**
 * Lets pending promise work finish (dispatcher calls, invoked promise actors): waits until
 * the event loop has drained its microtasks `rounds` times. No time passes on any clock.
 *
 * Use when: a test drives loops with a scripted dispatcher and must see the effect of a
 * call before asserting.
 */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
