import {isDriverVersion} from './driver-table.js';

/**
 * The first line of /proc/driver/nvidia/version, in both formats:
 *   NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Thu Feb 22 01:44:30 UTC 2024
 *   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  (...)
 * Older drivers have two-part versions (418.56).
 */
export function parseProcDriverVersion(text: string): {version: string; kernelModule: 'proprietary' | 'open'} | undefined {
  const line = text.split('\n').find((l) => l.startsWith('NVRM version:'));
  if (!line) return undefined;
  const m = /\b(Open )?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)\b/.exec(line);
  if (!m || !isDriverVersion(m[2]!)) return undefined;
  return {version: m[2]!, kernelModule: m[1] ? 'open' : 'proprietary'};
}

/** The version a user-space driver file name carries: libcuda.so.550.54.15 -> 550.54.15. */
export function libcudaVersion(fileName: string): string | undefined {
  const m = /^libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$/.exec(fileName);
  return m && isDriverVersion(m[1]!) ? m[1] : undefined;
}
