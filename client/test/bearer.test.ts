import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, TimeboxError, bearerTransport, type TransportRequest } from '../src/index.js';
import { FakeClock, reply, settle } from './fakes.js';

const question = { messages: [{ role: 'user' as const, content: 'hi' }] };
const ok = { answer: 'Hello.', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, requestId: 'r-1', elapsedMs: 5, upstreamAttempts: 1, truncated: false };

test('bearerTransport asks the token provider before every attempt', async () => {
  const clock = new FakeClock();
  let issued = 0;
  const sent: TransportRequest[] = [];
  const fetchImpl = async (_url: string, init: TransportRequest) => {
    sent.push(init);
    return sent.length === 1 ? reply(503, { error: { code: 'auth_unavailable', message: 'x', requestId: 'r-0' } }) : reply(200, ok);
  };
  const client = new TimeboxClient({ baseUrl: 'http://127.0.0.1:7071', clock, policy: { random: () => 0 }, transport: bearerTransport(() => `tok-${++issued}`, fetchImpl) });
  const answer = await settle(clock, client.chat(question));
  assert.equal(answer.answer, 'Hello.');
  assert.deepEqual(sent.map((r) => r.headers.authorization), ['Bearer tok-1', 'Bearer tok-2'], 'a fast 503 auth_unavailable is retried, with a fresh token');
});

test('bearerTransport: a 401 from the token check is not retried and reads as the server wrote it', async () => {
  const clock = new FakeClock();
  let calls = 0;
  const fetchImpl = async () => {
    calls++;
    return reply(401, { error: { code: 'unauthenticated', message: 'Sign in to use this service.', requestId: 'r-401' } },
      { 'x-should-retry': 'false', 'www-authenticate': 'Bearer error="invalid_token"' });
  };
  const client = new TimeboxClient({ baseUrl: 'http://127.0.0.1:7071', clock, policy: { random: () => 0 }, transport: bearerTransport(async () => 'expired', fetchImpl) });
  await assert.rejects(settle(clock, client.chat(question)), (err: unknown) => {
    assert.ok(err instanceof TimeboxError);
    assert.equal(err.code, 'unauthenticated');
    assert.equal(err.status, 401);
    return true;
  });
  assert.equal(calls, 1);
});
