#!/bin/sh
# Signs a release's SHA256SUMS: DIR/SHA256SUMS.sig, the raw 64-byte ed25519 signature of
# DIR/SHA256SUMS's bytes, then checks it with the public key that install.sh and the executable
# carry (the key of src/core/self/release-key.ts, or PUBLIC_KEY_FILE when given), so that a
# release signed with any other key - a wrong or rotated secret - fails here and is not published.
#
#   sh scripts/sign-release.sh PRIVATE_KEY_FILE DIR [PUBLIC_KEY_FILE]
#
# The release workflow (.github/workflows/release.yml) runs it with the repository secret
# CUDAENV_RELEASE_SIGNING_KEY (the PEM private key) in a file of mode 600 that it removes after.
# Needs OpenSSL >= 3.0 (pkeyutl -rawin).
set -eu
die() { printf 'sign-release: %s\n' "$1" >&2; exit 1; }
[ $# -ge 2 ] && [ $# -le 3 ] || die 'usage: sh scripts/sign-release.sh PRIVATE_KEY_FILE DIR [PUBLIC_KEY_FILE]'
key=$1 dir=$2
[ -s "$key" ] || die "$key is missing or empty: it must hold the ed25519 private key (PEM)"
[ -f "$dir/SHA256SUMS" ] || die "$dir/SHA256SUMS is missing: run npm run build:exe first"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudaenv-sign.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 3 ]; then
  cp "$3" "$tmp/public.pem"
else
  root=$(dirname "$0")/..
  sed -n '/-----BEGIN PUBLIC KEY-----/,/-----END PUBLIC KEY-----/p' "$root/src/core/self/release-key.ts" | sed 's/^.*\(-----BEGIN\)/\1/; s/\(-----END PUBLIC KEY-----\).*$/\1/' > "$tmp/public.pem"
fi
openssl pkey -in "$key" -pubout -out "$tmp/derived.pem" 2>"$tmp/err" || die "cannot read the private key $key: $(cat "$tmp/err")"
cmp -s "$tmp/derived.pem" "$tmp/public.pem" || die "the private key $key is not the release key's private half (its public key differs from $( [ $# -eq 3 ] && echo "$3" || echo src/core/self/release-key.ts)): SHA256SUMS not signed"
openssl pkeyutl -sign -inkey "$key" -rawin -in "$dir/SHA256SUMS" -out "$tmp/SHA256SUMS.sig" 2>"$tmp/err" || die "openssl could not sign: $(cat "$tmp/err")"
[ "$(wc -c < "$tmp/SHA256SUMS.sig")" -eq 64 ] || die "the signature is not 64 bytes: is $key an ed25519 key?"
openssl pkeyutl -verify -pubin -inkey "$tmp/public.pem" -rawin -in "$dir/SHA256SUMS" -sigfile "$tmp/SHA256SUMS.sig" >/dev/null 2>&1 || die "the signature does not verify with the public key"
mv -f "$tmp/SHA256SUMS.sig" "$dir/SHA256SUMS.sig"
printf 'sign-release: signed %s/SHA256SUMS (%s/SHA256SUMS.sig)\n' "$dir" "$dir" >&2
