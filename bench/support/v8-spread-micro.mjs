// The V8 defect behind issue 26's floor (v8:11536), measured on whichever node runs this:
// an object built by a spread and then given a key its source lacks gets a hidden class of
// its own each time on V8 11.3 (Node 20), not on V8 12.4 (Node 22). XState 5 builds its
// actor options that way (`{ ...defaultOptions, ...options }`: the "twoSpreads" row).
// Run: node bench/support/v8-spread-micro.mjs   (ns per object, two rounds)
const N = 1e6;

/** Prints the nanoseconds per object `make` takes, keeping the last 1 000 alive. */
function bench(name, make) {
  const keep = new Array(1000);
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) keep[i % 1000] = make(i);
  const ns = Number(process.hrtime.bigint() - start) / N;
  console.log(`${name.padEnd(22)} ${ns.toFixed(1)} ns/object`);
}

const source = () => ({ type: 'x', a: 1, b: 2, c: 3 });
console.log(`node ${process.version}, V8 ${process.versions.v8}`);
for (let round = 0; round < 2; round++) {
  bench('spreadThenNewKey', (i) => {
    const object = { ...source() };
    object.at = i;
    return object;
  });
  bench('spreadLiteralNewKey', (i) => ({ ...source(), at: i }));
  bench('spreadThenExistingKey', (i) => {
    const object = { ...source() };
    object.a = i;
    return object;
  });
  bench('objectAssignNewKey', (i) => Object.assign({}, source(), { at: i }));
  bench('twoSpreads', (i) => ({
    ...{ clock: 1, logger: 2, devTools: false },
    ...{ id: i, parent: undefined, src: 'x' },
  }));
}
