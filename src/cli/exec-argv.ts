/**
 * `cudaenv exec [FLAGS] CMD [ARGS...]`: the first word that is not one of exec's own flags
 * starts the command, as with env(1), fnm exec and sudo, so `cudaenv exec --cuda 13.0 nvcc
 * --version` runs `nvcc --version` (oclif took --version for a flag of exec's). The `--` the
 * docs show stays optional. Done before oclif sees the words: it would otherwise take a `-h`
 * or `--help` meant for the command as a request for exec's help.
 */
const WITH_VALUE = new Set(['--cuda', '--ld-library-path']);
const BOOLEAN = new Set(['--isolate', '--help', '-h']);

export function execArgv(argv: string[]): string[] {
  if (argv[0] !== 'exec') return argv;
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--') return argv;
    if (WITH_VALUE.has(word)) {
      i++;
      continue;
    }
    if (BOOLEAN.has(word) || [...WITH_VALUE].some((f) => word.startsWith(`${f}=`))) continue;
    // An unknown flag before any command stays with exec, which names it as unknown.
    if (word.startsWith('-')) return argv;
    return [...argv.slice(0, i), '--', ...argv.slice(i)];
  }
  return argv;
}
