/**
 * The GitHub Action's entry point (action.yml `main`, bundled into dist-action/ by
 * scripts/build-action.mjs). Failures become one ::error:: annotation and exit status 1.
 */
import * as core from '@actions/core';
import {CudaenvError, formatError} from '../core/errors.js';
import {inActionTerms} from './messages.js';
import {runAction} from './run.js';

const controller = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => controller.abort(new CudaenvError(`cancelled (${signal}); nothing was installed`, {code: 'interrupted'})));
}

try {
  const result = await runAction(process.env, controller.signal);
  if (!result.checkOk) process.exitCode = 1;
} catch (error) {
  core.setFailed(inActionTerms(formatError(error)));
}
