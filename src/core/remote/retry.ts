/** Back-off between attempts: 250 ms, 500 ms, 1 s, 2 s... (CUDAENV_RETRY_DELAY_MS sets the first step). */
export function retryDelayMs(attempt: number, env: NodeJS.ProcessEnv = process.env): number {
  const base = Number(env.CUDAENV_RETRY_DELAY_MS ?? 250);
  const step = Number.isFinite(base) && base >= 0 ? base : 250;
  return Math.min(step * 2 ** attempt, 8000);
}

export const MAX_ATTEMPTS = 5;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, {once: true});
  });
}
