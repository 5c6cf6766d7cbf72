/**
 * The public half of cudaenv's release signing key (ed25519): the release workflow signs each
 * release's SHA256SUMS with the private half (the repository secret CUDAENV_RELEASE_SIGNING_KEY),
 * and `cudaenv self-update` accepts a release only when SHA256SUMS.sig verifies with this key.
 * install.sh carries the same key (its RELEASE_KEY lines); test/core/self/release-key.test.ts
 * checks that the two are the same.
 *
 * There is exactly one trusted key and no setting that adds or replaces one: no environment
 * variable, file or flag. Tests sign their own releases with a key pair of their own and pass
 * its public half to selfUpdate() as a function argument (src/core/self/update.ts), or patch it
 * into their copy of install.sh or of the executable; nothing a user's environment holds can.
 */
export const RELEASE_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA74YwyQ0z/PG4z/D/KsthZ2uzVkxGTRLf9YaVSpc1S2o=
-----END PUBLIC KEY-----
`;
