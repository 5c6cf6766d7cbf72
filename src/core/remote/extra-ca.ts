import {readFileSync} from 'node:fs';
import type {rootCertificates as RootCertificates} from 'node:tls';

/**
 * NODE_EXTRA_CA_CERTS, applied when cudaenv opens a TLS connection instead of at every start.
 * Node 20 reads and parses that file before any code runs (85 ms for Debian's 220 KB
 * ca-certificates.crt, as much again as `node -e 0`), which would double `cudaenv use` for every
 * user whose network sets it. bin/cudaenv therefore moves the variable aside, and bin/run.cjs puts
 * it back into process.env (programs cudaenv starts get it) and leaves the path here, under a
 * process-wide symbol (no module has to load at start-up for it).
 */
const DEFERRED = Symbol.for('cudaenv.deferredExtraCaCerts');

type WithDeferred = NodeJS.Process & {[DEFERRED]?: string};

/** What bin/run.cjs calls when the launcher deferred the variable. */
export function deferExtraCaCerts(file: string): void {
  (process as WithDeferred)[DEFERRED] = file;
}

let warned = false;

/**
 * The `ca` option for TLS connections: Node's bundled roots plus the certificates of the deferred
 * file, or undefined when nothing was deferred (then Node already trusts the file, or nothing is
 * asked). A file that cannot be read or holds no certificate is ignored with one warning, as
 * Node ignores it ("Ignoring extra certs from ...").
 */
export function extraCaOption(rootCertificates: typeof RootCertificates, warn: (line: string) => void): string[] | undefined {
  const file = (process as WithDeferred)[DEFERRED];
  if (file === undefined || file === '') return undefined;
  let certs: string[] = [];
  let why = 'it holds no PEM certificate';
  try {
    certs = readFileSync(file, 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  } catch (error) {
    why = `cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  if (certs.length === 0) {
    if (!warned) warn(`NODE_EXTRA_CA_CERTS=${file}: ${why}; ignored, as Node ignores it`);
    warned = true;
    return undefined;
  }
  return [...rootCertificates, ...certs];
}
