/**
 * The environment variables that change what a caller loads at run time, read from the environment
 * the check is given (CheckOptions.runtimeEnv; by default the check's own). Apart from families.ts
 * because every check's cache key reads them, and a check answered from the verdict cache loads
 * none of the run-time facts.
 */
export const RUNTIME_ENV_VARIABLES = ['NCCL_NET_PLUGIN', 'GGML_BACKEND_PATH', 'HWLOC_PLUGINS_PATH'] as const;
export type RuntimeEnv = Readonly<Partial<Record<(typeof RUNTIME_ENV_VARIABLES)[number], string>>>;

/** The variables of RUNTIME_ENV_VARIABLES that `env` sets (to anything, "" included). */
export function runtimeEnvOf(env: NodeJS.ProcessEnv): RuntimeEnv {
  const out: Partial<Record<(typeof RUNTIME_ENV_VARIABLES)[number], string>> = {};
  for (const name of RUNTIME_ENV_VARIABLES) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
