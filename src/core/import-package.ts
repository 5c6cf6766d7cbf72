/**
 * import() of an ES module package (`conf`). bin/run.cjs compiles the start-up bundle itself, to
 * hand V8 the code it kept (self/kept-code.ts): a script compiled that way has no import() of its own
 * (Node's only callback for one is experimental and warns), so the launcher gives this one, its own
 * import() (bin/ and dist/ find the same node_modules). Anywhere else, the module's own import().
 */
export function importPackage<T>(name: string): Promise<T> {
  const given = (globalThis as Record<symbol, unknown>)[Symbol.for('cudaenv.importPackage')];
  return typeof given === 'function' ? (given as (n: string) => Promise<T>)(name) : (import(name) as Promise<T>);
}
