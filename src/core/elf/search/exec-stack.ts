import {versionAtMost} from '../read/ldcache/host-loader.js';
import {PF_X} from '../read/elf/header.js';
import {tunableInEffect} from '../read/machine/tunables.js';
import type {ElfInfo} from '../read/elf/types.js';

/**
 * Executable stacks, which glibc 2.41 and later restrict (the resolver drops a preload it may not
 * map; the checker reports the rest). Checked against Debian's 2.41 and Ubuntu's 2.43.
 */

/**
 * Machines whose glibc DEFAULT_STACK_PERMS (sysdeps/<machine>/stackinfo.h) lack PF_X: there an object
 * without PT_GNU_STACK does not ask for an executable stack. AArch64 (measured: Debian's 2.41 dlopens
 * such an object and refuses one with PF_X), RISC-V, LoongArch.
 */
const NON_EXEC_DEFAULT = new Set([183, 243, 258]);

/** PT_GNU_STACK with PF_X, or none at all where the machine's default stack is executable (x86). */
export function asksExecStack(info: ElfInfo): boolean {
  return info.stackFlags === null ? !NON_EXEC_DEFAULT.has(info.machine) : (info.stackFlags & PF_X) !== 0;
}

/** glibc.rtld.execstack (0 to 2; every loader that has it reads only its last setting), null for the default. */
export function execStackTunable(tunables: string | undefined, glibc: [number, number] | null): number | null {
  return tunableInEffect(tunables, 'glibc.rtld.execstack', (n) => n <= 2, glibc);
}

/**
 * GLIBC_TUNABLES=glibc.rtld.execstack=0 (the tunable exists from glibc 2.41; older loaders ignore
 * it): no object may have an executable stack, neither the program, nor what it starts with, nor
 * what it dlopens; a preload that asks for one is dropped ("cannot be preloaded ...: ignored").
 */
export function execStackForbidden(tunables: string | undefined, glibc: [number, number] | null): boolean {
  if (glibc !== null && versionAtMost(glibc, 2, 40)) return false;
  return execStackTunable(tunables, glibc) === 0;
}
