import {UsageError} from '../errors.js';
import {SHELL_NAMES, type Shell} from './shell.js';

/**
 * The one place that knows every shell implementation: shell.ts holds the interface they
 * implement, so it cannot also import them without a circle.
 */
export async function shellFor(name: string): Promise<Shell> {
  switch (name) {
    case 'bash': return new (await import('./bash.js')).BashShell();
    case 'zsh': return new (await import('./zsh.js')).ZshShell();
    case 'fish': return new (await import('./fish.js')).FishShell();
    default:
      throw new UsageError(`unsupported shell ${JSON.stringify(name)}`, `Supported shells: ${SHELL_NAMES.join(', ')}.`);
  }
}
