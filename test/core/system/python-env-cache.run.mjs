// Run by python-env-cache.test.ts under strace: one inspectPythonCached, from the built dist/.
import {join} from 'node:path';
const {inspectPythonCached} = await import(new URL('../../../dist/core/system/python-env-cache.js', import.meta.url));
const [python, dir] = process.argv.slice(2);
inspectPythonCached({env: process.env, python, cwd: dir, cacheDir: join(dir, 'cache')});
