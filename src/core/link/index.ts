/** `cudaenv link` / `unlink`: the machine-wide /usr/local/cuda link, and `exec --isolate`'s private one. */
export {linkVersion, linkValueFor, type LinkContext, type LinkResult} from './link.js';
export {unlinkTarget, type UnlinkResult} from './unlink.js';
export {altOptionsFromEnv} from './alternatives.js';
export {ldconfigOptionsFromEnv} from './ldconfig.js';
export {sudoCommand} from './sudo.js';
