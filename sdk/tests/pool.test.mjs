// The official OpenAI SDK for JavaScript against a pool of two simulated
// Azure OpenAI resources (AZURE_OPENAI_BACKENDS): a throttled first
// deployment costs the SDK nothing but the second's answer. One SDK call,
// two upstream attempts (a's fast 429, b's answer), in the handler's log
// line; a slow failure of the first is answered, tried on neither.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { startStack } from '../../e2e/harness.mjs';

let stack;
let client;

before(async () => {
  stack = await startStack({ pool: true });
  client = new OpenAI({ baseURL: `${stack.api}/openai/v1`, apiKey: 'unused: timebox takes no API key', maxRetries: 2 });
});

after(async () => {
  await stack?.stop();
});

const ask = (content, extra) => client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

// Resolves once the handler's health says both backends can take a call:
// a test that throttled one waits out its cooldown before the next.
async function bothAvailable() {
  for (;;) {
    const health = await (await fetch(`${stack.api}/api/health`)).json();
    if (health.backends.available === 2) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const chats = (from) => stack.requestLog(from).filter((l) => l.route === '/openai/v1/chat/completions');

// The attempts of the handler's log line for the request that returned.
async function attemptsOf(requestId) {
  const line = await stack.waitForRequestLog((l) => l.requestId === requestId);
  return { backend: line.backend, attempts: line.attempts.map((a) => `${a.backend}:${a.status}`), line };
}

test('a fast 429 on the first deployment is answered by the second, in one call', async () => {
  await bothAvailable();
  const from = stack.handler.lines.length;
  const { data, response } = await ask('[[sim:throttle s=1 backend=a]] Count to 5.').withResponse();
  assert.equal(data.choices[0].message.content, '1, 2, 3, 4, 5.');
  const { backend, attempts } = await attemptsOf(response.headers.get('x-request-id'));
  assert.equal(backend, 'b');
  assert.deepEqual(attempts, ['a:429', 'b:200']);
  assert.equal(chats(from).length, 1, 'one SDK call: the SDK never saw the 429');
});

test('a stream fails over before its first token', async () => {
  await bothAvailable();
  const stream = await ask('[[sim:status code=503 backend=a]] Count to 10.', { stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, '1, 2, 3, 4, 5, 6, 7, 8, 9, 10.');
  const line = await stack.waitForRequestLog((l) => l.stream && l.attempts?.length === 2);
  assert.deepEqual(line.attempts.map((a) => `${a.backend}:${a.status}`), ['a:503', 'b:200']);
});

test('a slow failure of the first is answered, and tried on neither again', async () => {
  await bothAvailable();
  const from = stack.handler.lines.length;
  await assert.rejects(ask('[[sim:status code=503 after=3500 backend=a]] hello'), (err) => {
    assert.equal(err.status, 500);
    assert.equal(err.headers.get('x-should-retry'), 'false');
    return true;
  });
  const log = await stack.waitForRequestLog((l) => l.route === '/openai/v1/chat/completions' && l.status === 500).then(() => chats(from));
  assert.equal(log.length, 1, 'the SDK did not retry it');
  assert.deepEqual(log[0].attempts.map((a) => `${a.backend}:${a.status}`), ['a:503']);
});
