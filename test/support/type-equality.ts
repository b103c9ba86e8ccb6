// Type-level assertions for tests that tie one shape to another. They are checked by
// `npm run typecheck` (tsc type-checks test/); a failing one is a compile error, and a
// `// @ts-expect-error` line above a wrong one shows that the check can fail.

/**
 * True when A and B are the same type, not merely assignable to each other: `any` equals
 * only `any`, an optional field differs from a required one, `string` differs from a literal.
 */
export type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when T is `true`: `type _ = Expect<Equal<A, B>>`. */
export type Expect<T extends true> = T;

/**
 * T with every `readonly` removed, all the way down (arrays become plain arrays, an
 * intersection of objects becomes one object); functions are kept as they are.
 */
export type Mutable<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer Element)[]
    ? Mutable<Element>[]
    : T extends object
      ? { -readonly [K in keyof T]: Mutable<T[K]> }
      : T;

/** A and B are the same shape once readonly modifiers are set aside (a zod schema infers mutable types). */
export type SameShape<A, B> = Equal<Mutable<A>, Mutable<B>>;
