// One source per shape: where a zod schema and a TypeScript type describe the same value,
// or a factory must produce a given machine, the types are tied here. The checks are types
// (`npm run typecheck`); each `// @ts-expect-error` shows a wrong shape is caught.
import { describe, expect, it } from 'vitest';
import { createFunctionMachine, type FunctionMachine } from '../machines/function.machine.js';
import { createLoopMachine, type LoopMachine } from '../machines/loop.machine.js';
import type { MachineFactories } from '../machines/system.machine.js';
import type { Equal, Expect, SameShape } from './support/type-equality.js';

describe('the type helpers', () => {
  it('tell equal types from merely assignable ones', () => {
    type Checks = [
      Expect<Equal<{ a: string }, { a: string }>>,
      // @ts-expect-error a literal is not string
      Expect<Equal<{ a: 'x' }, { a: string }>>,
      // @ts-expect-error an optional field is not a required one
      Expect<Equal<{ a?: string }, { a: string }>>,
      // @ts-expect-error readonly differs for Equal
      Expect<Equal<{ readonly a: string }, { a: string }>>,
      Expect<SameShape<{ readonly a: readonly { readonly b: number }[] }, { a: { b: number }[] }>>,
      // @ts-expect-error SameShape still sees a missing field
      Expect<SameShape<{ readonly a: string }, { a: string; b: number }>>,
    ];
    expect<Checks['length']>(6).toBe(6);
  });
});

describe('MachineFactories', () => {
  it('takes factories of the right machine, and refuses a factory of another', () => {
    const factories: MachineFactories = {
      function: (env) => createFunctionMachine(env),
      loop: (env) => createLoopMachine(env).provide({}),
    };
    type Checks = [
      Expect<Equal<ReturnType<NonNullable<MachineFactories['function']>>, FunctionMachine>>,
      Expect<Equal<ReturnType<NonNullable<MachineFactories['loop']>>, LoopMachine>>,
    ];
    // @ts-expect-error a loop factory must build a loop machine
    const wrong: MachineFactories = { loop: createFunctionMachine };
    expect(Object.keys({ ...factories, ...wrong }).sort()).toEqual(['function', 'loop']);
    expect<Checks['length']>(2).toBe(2);
  });
});
