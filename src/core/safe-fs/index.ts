/**
 * Every file cudaenv writes goes through here (docs/security.md): directories held by descriptor,
 * new files made with O_EXCL|O_NOFOLLOW under random names, and as root only directories that
 * root alone can change.
 */
export {openDir, withDir, type SafeDir} from './dir.js';
export {mkdirSafely, removeSafely, symlinkIn, symlinkSafely, temporaryName, writeFileSafely, writeIn, type WriteOptions} from './write.js';
export {readFileSafely} from './read.js';
export {octal, runningAsRoot, whyUntrusted} from './trust.js';
