import {expect, test} from '@jest/globals';
import {redactCredentials} from '../../../src/core/text/redact.js';

test('redactCredentials hides passwords and tokens of every URL in a text, and nothing else', () => {
  expect(redactCredentials('cannot download https://alice:s%40cret@art.example.com/cuda/redist/x.json: 401')).toBe('cannot download https://alice:****@art.example.com/cuda/redist/x.json: 401');
  // A token given as the user name (https://TOKEN@host) is the secret itself.
  expect(redactCredentials('http://ghp_abc123@host:8080/a and ftp://u:p@h/')).toBe('http://****@host:8080/a and ftp://u:****@h/');
  expect(redactCredentials('https://host/path/with@sign?q=a@b#x@y')).toBe('https://host/path/with@sign?q=a@b#x@y');
  expect(redactCredentials('no url here: user@example.com, /home/a:b@c')).toBe('no url here: user@example.com, /home/a:b@c');
  // The placeholder of a hint that shows how to write credentials stays readable.
  expect(redactCredentials('HTTPS_PROXY=http://USER:PASSWORD@HOST:PORT')).toBe('HTTPS_PROXY=http://USER:PASSWORD@HOST:PORT');
});
