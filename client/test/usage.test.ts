import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, TimeboxError, usageLine, type Usage } from '../src/index.js';
import { FakeClock, reply, scripted, settle, type Step } from './fakes.js';

function setup(steps: Step[]) {
  const clock = new FakeClock();
  const transport = scripted(clock, steps);
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport, clock, policy: { random: () => 0 } });
  return { clock, transport, client };
}

const message = 'Your daily limit of 200,000 tokens is used up. It resets at 00:00 UTC, in 5 h 12 min.';
const exceeded = reply(429, { error: { code: 'quota_exceeded', message, requestId: 'r-q' } }, { 'x-should-retry': 'false', 'retry-after': '18720' });

test('usage() reads GET /api/usage', async () => {
  const body: Usage = {
    user: { day: { used: 12340, reserved: 1324, limit: 200000, resetsAt: '2026-12-02T00:00:00Z' } },
    tenant: { month: { used: 5_000_000, reserved: 0, limit: 20_000_000, resetsAt: '2027-01-01T00:00:00Z' } },
  };
  const { clock, transport, client } = setup([{ ms: 20, response: reply(200, body) }]);
  const usage = await settle(clock, client.usage());
  assert.deepEqual(usage, body);
  assert.equal(transport.calls[0].url, 'https://app.example/api/usage');
  assert.equal(transport.calls[0].request.method, 'GET');
  assert.equal(usageLine(usage), '12,340 of 200,000 tokens used today, 1,324 held by answers under way');
});

test('usageLine says the used and the held apart, and the held only when there is some', () => {
  const day = (used: number, reserved: number) => ({ user: { day: { used, reserved, limit: 2000, resetsAt: '2026-12-02T00:00:00Z' } } });
  assert.equal(usageLine(day(501, 1499)), '501 of 2,000 tokens used today, 1,499 held by answers under way');
  assert.equal(usageLine(day(0, 2000)), '0 of 2,000 tokens used today, 2,000 held by answers under way');
  assert.equal(usageLine(day(501, 0)), '501 of 2,000 tokens used today');
});

test('usageLine says the tenant month without a user day, and nothing without limits', () => {
  assert.equal(usageLine({ tenant: { month: { used: 999, reserved: 0, limit: 20_000_000, resetsAt: '2027-01-01T00:00:00Z' } } }), '999 of 20,000,000 tokens used this month');
  assert.equal(usageLine({}), undefined);
});

test('quota_exceeded is surfaced at once with its message: the wait never fits', async () => {
  const { clock, transport, client } = setup([{ ms: 30, response: exceeded }]);
  const p = client.chat({ messages: [{ role: 'user', content: 'hi' }] });
  const err = await settle(clock, p.then(() => undefined, (e: unknown) => e));
  assert.ok(err instanceof TimeboxError);
  assert.equal(transport.calls.length, 1, 'never retried');
  assert.equal(err.code, 'quota_exceeded');
  assert.equal(err.status, 429);
  assert.equal(err.message, message);
  assert.equal(err.reason, 'should_not_retry');
  assert.equal(err.retryAfterMs, 18_720_000);
  assert.equal(err.elapsedMs, 30);
});

test('quota_unavailable is retried after its Retry-After', async () => {
  const unavailable = reply(503, { error: { code: 'quota_unavailable', message: 'The usage store is unavailable.', requestId: 'r-u' } }, { 'retry-after': '5' });
  const ok = reply(200, { answer: 'Hello.', finishReason: 'stop', usage: {}, requestId: 'r-ok', elapsedMs: 5, upstreamAttempts: 1, truncated: false });
  const { clock, transport, client } = setup([{ ms: 10, response: unavailable }, { ms: 10, response: ok }]);
  const answer = await settle(clock, client.chat({ messages: [{ role: 'user', content: 'hi' }] }));
  assert.equal(answer.answer, 'Hello.');
  assert.equal(transport.calls.length, 2);
  assert.equal(transport.calls[1].at, 5_010, "sent again 5 s after the 503 came back");
});
