#!/usr/bin/env node
// Started by bin/cudaenv with the loader's variables cleared: put the user's back before any
// command reads them or hands them to a child (exec, nvcc, python).
const saved = process.env.CUDAENV_USER_VARS;
const DEFERRED = ['LD_LIBRARY_PATH', 'LD_PRELOAD', 'LD_AUDIT', 'NODE_EXTRA_CA_CERTS'];
if (saved !== undefined) {
  for (const name of saved.split(' ')) {
    if (!DEFERRED.includes(name)) continue;
    process.env[name] = process.env[`CUDAENV_USER_${name}`] ?? '';
    // Node started without it: cudaenv's own TLS connections apply it (src/core/remote/extra-ca.ts).
    if (name === 'NODE_EXTRA_CA_CERTS') process[Symbol.for('cudaenv.deferredExtraCaCerts')] = process.env[name];
  }
  for (const name of ['VARS', ...DEFERRED]) delete process.env[`CUDAENV_USER_${name}`];
}

// The hot commands (`--version`, `current`, and `check PATH...` without flags) skip oclif:
// loading it costs more than the whole command, and the shell hook and users call them often.
// Imported after the lines above (static imports would run first and see the cleared variables).
const {installLastResort} = await import('../dist/cli/last-resort.js');
installLastResort(); // an exception nothing caught: one line, exit 1, locks and staging cleaned up

// One bundled file (scripts/bundle-fast-path.mjs): resolving the modules one by one cost more than `use` itself.
const {fastPath} = await import('../dist/fast-path.bundle.js').catch(() => import('../dist/fast-path.js'));
let argv = process.argv.slice(2);
if (!(await fastPath(argv))) {
  if (argv[0] === 'exec') argv = (await import('../dist/cli/exec-argv.js')).execArgv(argv);
  const {fileURLToPath} = await import('node:url');
  const {execute} = await import('@oclif/core');
  // cudaenv has no plugins: skip oclif's user-plugin lookup, which reads (and on an
  // unwritable HOME warns about) ~/.local/share/cudaenv/package.json at every start.
  const root = fileURLToPath(new URL('..', import.meta.url));
  await execute({args: argv, dir: import.meta.url, loadOptions: {root, userPlugins: false}});
}
