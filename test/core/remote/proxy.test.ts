import {describe, expect, test} from '@jest/globals';
import {bypassed, parseProxy, proxyFor} from '../../../src/core/remote/proxy.js';

const url = (s: string): URL => new URL(s);

describe('proxyFor: the variables curl, pip and conda users set', () => {
  test('https URLs use https_proxy, http URLs http_proxy, both fall back to all_proxy', () => {
    const env = {https_proxy: 'http://s:3128', http_proxy: 'http://p:8080', all_proxy: 'http://a:1'};
    expect(proxyFor(url('https://downloads.vendor.example/x'), env)).toMatchObject({host: 's', port: 3128, variable: 'https_proxy'});
    expect(proxyFor(url('http://mirror.lan/x'), env)).toMatchObject({host: 'p', port: 8080, variable: 'http_proxy'});
    expect(proxyFor(url('https://x/'), {all_proxy: 'http://a:1'})).toMatchObject({host: 'a', variable: 'all_proxy'});
    expect(proxyFor(url('https://x/'), {})).toBeUndefined();
  });

  test('upper case works too; the lower-case name wins; HTTP_PROXY is ignored in a CGI (httpoxy)', () => {
    expect(proxyFor(url('https://x/'), {HTTPS_PROXY: 'http://up:1'})).toMatchObject({host: 'up', variable: 'HTTPS_PROXY'});
    expect(proxyFor(url('https://x/'), {HTTPS_PROXY: 'http://up:1', https_proxy: 'http://low:2'})).toMatchObject({host: 'low'});
    expect(proxyFor(url('http://x/'), {HTTP_PROXY: 'http://up:1'})).toMatchObject({host: 'up'});
    expect(proxyFor(url('http://x/'), {HTTP_PROXY: 'http://evil:1', REQUEST_METHOD: 'GET'})).toBeUndefined();
    expect(proxyFor(url('https://x/'), {https_proxy: '  '})).toBeUndefined();
  });

  test('a proxy without a scheme is HTTP on port 1080 unless given (as curl reads it); credentials become Basic auth and are hidden in messages', () => {
    expect(parseProxy('proxy.corp', 'https_proxy')).toMatchObject({host: 'proxy.corp', port: 1080, display: 'http://proxy.corp'});
    const p = parseProxy('http://me:p%40ss%3Aw@proxy:3128', 'HTTPS_PROXY');
    expect(p.authorization).toBe(`Basic ${Buffer.from('me:p@ss:w').toString('base64')}`);
    expect(p.display).toBe('http://me:***@proxy:3128');
    expect(parseProxy('http://[::1]:3128', 'x')).toMatchObject({host: '::1', port: 3128});
  });

  test('a proxy it cannot use is one clear error naming the variable, not a direct connection behind the user\'s back', () => {
    expect(() => parseProxy('socks5://127.0.0.1:1080', 'ALL_PROXY')).toThrow(/^ALL_PROXY=socks5:\/\/127\.0\.0\.1:1080 cannot be used: .*socks5 proxies are not supported/);
    expect(() => parseProxy('https://proxy:443', 'https_proxy')).toThrow(/https proxies are not supported/);
    expect(() => parseProxy('http://', 'https_proxy')).toThrow(/cannot be used/);
    expect(() => parseProxy('http://a%zz:b@p:1', 'https_proxy')).toThrow(/percent-encoding/);
  });
});

describe('no_proxy', () => {
  test.each<[string, string, boolean]>([
    ['https://downloads.vendor.example/x', '*', true],
    ['https://downloads.vendor.example/x', 'vendor.example', true],
    ['https://downloads.vendor.example/x', '.vendor.example', true],
    ['https://downloads.vendor.example/x', '*.vendor.example', true],
    ['https://vendor.example/x', '.vendor.example', true],
    ['https://notvendor.example/x', 'vendor.example', false],
    ['https://VENDOR.example./x', 'vendor.example', true],
    ['http://mirror.lan:8080/x', 'mirror.lan:8080', true],
    ['http://mirror.lan:8081/x', 'mirror.lan:8080', false],
    ['http://mirror.lan/x', 'mirror.lan:80', true],
    ['https://mirror.lan/x', 'mirror.lan:80', false],
    ['http://127.0.0.1:9/x', 'localhost,127.0.0.1', true],
    ['http://127.0.0.1:9/x', 'localhost 127.0.0.1', true],
    ['http://10.1.2.3/x', '10.0.0.0/8', true],
    ['http://11.1.2.3/x', '10.0.0.0/8', false],
    ['http://[fd00::5]/x', 'fd00::/8', true],
    ['http://[::1]:8080/x', '[::1]:8080', true],
    ['http://[::1]:8080/x', '::1', true],
    ['http://1.2.3.4/x', '2.3.4', false], // an IP address is never matched as a domain suffix
    ['http://10.1.2.3/x', '10.0.0.0/99', false],
    ['http://x.lan/x', '', false],
  ])('%s with no_proxy=%j -> %s', (target, noProxy, expected) => {
    expect(bypassed(url(target), noProxy)).toBe(expected);
  });

  test('a host in no_proxy (either case) is reached directly', () => {
    expect(proxyFor(url('https://mirror.lan/x'), {https_proxy: 'http://p:1', NO_PROXY: 'mirror.lan'})).toBeUndefined();
    expect(proxyFor(url('https://mirror.lan/x'), {https_proxy: 'http://p:1', no_proxy: 'other', NO_PROXY: 'mirror.lan'})).toMatchObject({host: 'p'});
  });
});
