/**
 * import() of an ES module package (`conf`). bin/run.cjs compiles the start-up bundle itself, to
 * hand V8 the code it kept (self/kept-code.ts): a script compiled that way has no import() of its own
 * (Node's only callback for one is experimental and warns), so the launcher gives the bundle its own
 * import() (bin/ and dist/ find the same node_modules), used when given. Otherwise `load`, the
 * caller's literal import() of the package: the executable's bundler (scripts/build-exe.mjs) bundles
 * the package only where it sees that literal.
 */
export function importPackage<T>(name: string, load: () => Promise<T>): Promise<T> {
  const given = (globalThis as Record<symbol, unknown>)[Symbol.for('cudaenv.importPackage')];
  return typeof given === 'function' ? (given as (n: string) => Promise<T>)(name) : load();
}
