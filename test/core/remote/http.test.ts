import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import {httpGet, readBody} from '../../../src/core/remote/http.js';

// readBody's idle timeout, against a real server on loopback that sends part of a body and
// then nothing (a mirror or proxy that hangs mid-download).
let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, {'content-length': 3 * 1024});
    res.write(Buffer.alloc(1024, 1));
    if (req.url === '/stalls') return; // never more: the client must give up
    // /slow: the rest in two more pieces, 150 ms apart
    setTimeout(() => res.write(Buffer.alloc(1024, 2)), 150);
    setTimeout(() => res.end(Buffer.alloc(1024, 3)), 300);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('readBody', () => {
  test('a body that delivers nothing for idleMs is given up with ETIMEDOUT, after the bytes that came', async () => {
    const res = await httpGet(`${base}/stalls`);
    let got = 0;
    const started = Date.now();
    const error = await (async () => {
      for await (const chunk of readBody(res, 300)) got += chunk.length;
    })().catch((e: unknown) => e as NodeJS.ErrnoException);
    expect(error).toMatchObject({code: 'ETIMEDOUT', message: expect.stringMatching(/^no data from http:\/\/127\.0\.0\.1:\d+\/stalls for 0 s$/)});
    expect(got).toBe(1024);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  test('gaps shorter than idleMs, and time the consumer spends on a chunk, do not count', async () => {
    const res = await httpGet(`${base}/slow`);
    const chunks: Buffer[] = [];
    for await (const chunk of readBody(res, 250)) {
      chunks.push(chunk);
      // The consumer holds each chunk longer than idleMs (xz's pipe full): not a stalled server.
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    expect(Buffer.concat(chunks).equals(Buffer.concat([Buffer.alloc(1024, 1), Buffer.alloc(1024, 2), Buffer.alloc(1024, 3)]))).toBe(true);
  });
});
