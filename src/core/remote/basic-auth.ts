/**
 * The Basic `Authorization` (or `Proxy-Authorization`) value of a URL's user and password,
 * percent-decoded; undefined when it has none, null when their percent-encoding is broken.
 */
export function basicAuthorization(url: URL): string | undefined | null {
  if (!url.username && !url.password) return undefined;
  try {
    return `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  } catch {
    return null;
  }
}
