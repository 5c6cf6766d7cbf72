/**
 * Credentials in URLs (a mirror behind Artifactory or Nexus: https://USER:TOKEN@host/...) never
 * reach a message, a receipt or --json: the password becomes ****, and a user name given alone
 * (a token as the user: https://TOKEN@host) does too, as pip shows them.
 */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*)@/gi;

export function redactCredentials(text: string): string {
  return text.replace(USERINFO, (m, scheme: string, userinfo: string) => {
    // The placeholder of a hint that shows how to write them (http://USER:PASSWORD@HOST:PORT) stays.
    if (/^[A-Z]+:PASSWORD$/.test(userinfo)) return m;
    const colon = userinfo.indexOf(':');
    return colon < 0 ? `${scheme}****@` : `${scheme}${userinfo.slice(0, colon)}:****@`;
  });
}
