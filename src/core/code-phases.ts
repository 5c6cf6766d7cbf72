/**
 * What this process ran beyond its command's own path (the loader model, set by the check when it
 * must read files): bin/run.cjs keeps the bundle's compiled code per command and phase
 * (self/kept-code.ts), since the code a command compiled differs with it.
 */
const phases = new Set<string>();

export function notePhase(name: string): void {
  phases.add(name);
}

export function phasesRun(): string[] {
  return [...phases].sort();
}
