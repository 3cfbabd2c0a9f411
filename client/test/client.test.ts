import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, spfxTransport, type AttemptEvent, type ResponseLike } from '../src/index.js';
import { FakeClock, rejection, reply, scripted, settle, type Step } from './fakes.js';

const ok = reply(200, { answer: 'Paris.', finishReason: 'stop', usage: {}, requestId: 'r-ok', elapsedMs: 5, upstreamAttempts: 1, truncated: false });
const gateway = (status: number, headers: Record<string, string> = {}) => reply(status, { error: { code: 'upstream_unavailable', message: 'The AI service is busy.', requestId: 'r-' + status } }, headers);
const question = { messages: [{ role: 'user' as const, content: 'Capital of France?' }] };

function setup(steps: Step[], options: Partial<ConstructorParameters<typeof TimeboxClient>[0]> = {}) {
  const clock = new FakeClock();
  const transport = scripted(clock, steps);
  const events: AttemptEvent[] = [];
  const client = new TimeboxClient({
    baseUrl: 'https://app.example/',
    transport,
    clock,
    policy: { random: () => 0 },
    onAttempt: (e) => events.push(e),
    ...options,
  });
  return { clock, transport, events, client };
}

test('a fast failure is retried', async () => {
  const { clock, transport, events, client } = setup([{ ms: 200, response: gateway(503) }, { ms: 300, response: ok }]);
  const answer = await settle(clock, client.chat(question));
  assert.equal(answer.answer, 'Paris.');
  assert.equal(transport.calls.length, 2);
  assert.deepEqual(events.map((e) => [e.attempt, e.status, e.elapsedMs, e.decision, e.retry, e.waitMs]), [
    [1, 503, 200, 'retry', true, 250],
    [2, 200, 300, 'success', false, 0],
  ]);
  // The second attempt starts after the jittered backoff (random 0: 250 ms).
  assert.equal(transport.calls[1].at, 450);
});

test('two fast 503s then success: three requests and the answer', async () => {
  const { clock, transport, client } = setup([{ ms: 100, response: gateway(503) }, { ms: 100, response: gateway(503) }, { ms: 100, response: ok }]);
  const answer = await settle(clock, client.chat(question));
  assert.equal(answer.requestId, 'r-ok');
  assert.deepEqual(transport.calls.map((c) => c.at), [0, 350, 950]);
  assert.equal(transport.calls[0].url, 'https://app.example/api/chat');
  assert.equal(transport.calls[0].request.method, 'POST');
  assert.deepEqual(JSON.parse(transport.calls[0].request.body!), question);
});

test('a failure at the threshold is a timeout: no retry', async () => {
  const { clock, transport, client } = setup([{ ms: 30_000, response: gateway(504) }, { ms: 10, response: ok }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'slow_failure');
  assert.equal(err.timeout, true);
  assert.equal(err.status, 504);
});

test('a failure just under the threshold is still retried', async () => {
  const { clock, transport, client } = setup([{ ms: 29_999, response: gateway(504) }, { ms: 10, response: ok }]);
  await settle(clock, client.chat(question));
  assert.equal(transport.calls.length, 2);
});

test('the last attempt is never retried', async () => {
  const { clock, transport, events, client } = setup([{ ms: 10, response: gateway(502) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 3);
  assert.equal(err.attempts, 3);
  assert.equal(err.reason, 'last_attempt');
  assert.deepEqual(events.map((e) => e.decision), ['retry', 'retry', 'last_attempt']);
});

test('fetch that takes 40 s and returns a gateway error is called exactly once', async () => {
  const { clock, transport, events, client } = setup([{ ms: 40_000, response: reply(504, 'Gateway Timeout') }, { ms: 10, response: ok }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(clock.now(), 40_000);
  assert.equal(err.status, 504);
  assert.equal(err.timeout, true);
  assert.equal(err.attempts, 1);
  assert.equal(err.elapsedMs, 40_000);
  assert.equal(err.code, 'http_504');
  assert.match(err.message, /HTTP 504.*took 40 s.*not retried/);
  assert.deepEqual(events.map((e) => [e.decision, e.timeout]), [['slow_failure', true]]);
});

test('x-should-retry: false stops at once and keeps the server code and message', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: gateway(503, { 'x-should-retry': 'false', 'x-request-id': 'hdr' }) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'should_not_retry');
  assert.equal(err.code, 'upstream_unavailable');
  assert.equal(err.serverMessage, 'The AI service is busy.');
  assert.equal(err.message, 'The AI service is busy.');
  assert.equal(err.requestId, 'r-503');
});

test("the server's 500 deadline_exceeded is final and readable", async () => {
  const body = { error: { code: 'deadline_exceeded', message: 'The answer took too long; please try a shorter question.', requestId: 'r-500' } };
  const { clock, transport, client } = setup([{ ms: 2_900, response: reply(500, body, { 'x-should-retry': 'false' }) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.status, 500);
  assert.equal(err.reason, 'not_retryable');
  assert.equal(err.timeout, true);
  assert.equal(err.message, body.error.message);
});

test('Retry-After is waited exactly', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: gateway(429, { 'Retry-After': '2' }) }, { ms: 10, response: ok }]);
  await settle(clock, client.chat(question));
  assert.deepEqual(transport.calls.map((c) => c.at), [0, 2_010]);
});

test('retry-after-ms wins over Retry-After', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: gateway(429, { 'Retry-After': '2', 'retry-after-ms': '750' }) }, { ms: 10, response: ok }]);
  await settle(clock, client.chat(question));
  assert.deepEqual(transport.calls.map((c) => c.at), [0, 760]);
});

test('a wait over the cap stops and says when to try again', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: reply(429, { error: { code: 'rate_limited', message: 'Too many requests.' } }, { 'Retry-After': '120' }) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'wait_too_long');
  assert.equal(err.retryAfterMs, 120_000);
  assert.equal(err.code, 'rate_limited');
  assert.equal(err.message, 'Too many requests. Try again in 120 s.');
});

test('a server message that already says when (retry-after-ms names the wait) is not repeated', async () => {
  const { clock, client } = setup([{ ms: 10, response: reply(429, { error: { code: 'rate_limited', message: 'The AI service is busy. Try again in 45 s.' } }, { 'Retry-After': '45', 'retry-after-ms': '45000' }) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(err.message, 'The AI service is busy. Try again in 45 s.');
});

test("a wait past the caller's deadline stops", async () => {
  const { clock, transport, client } = setup([{ ms: 1_000, response: gateway(503, { 'Retry-After': '10' }) }], { deadlineMs: 5_000 });
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'wait_too_long');
  assert.match(err.message, /Try again in 10 s\.$/);
});

test('x-client-timeout-ms carries the attempt timeout, shrunk to the deadline', async () => {
  const { clock, transport, client } = setup([{ ms: 1_000, response: gateway(503) }, { ms: 10, response: ok }], { attemptTimeoutMs: 20_000, deadlineMs: 12_000 });
  await settle(clock, client.chat(question, { headers: { 'x-functions-key': 'k' } }));
  const sent = transport.calls.map((c) => c.request.headers);
  assert.equal(sent[0]['x-client-timeout-ms'], '12000');
  assert.equal(sent[1]['x-client-timeout-ms'], String(12_000 - 1_250));
  assert.equal(sent[0]['x-functions-key'], 'k');
  assert.equal(sent[0]['content-type'], 'application/json');
});

test('the default attempt timeout is 230 s', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: ok }]);
  await settle(clock, client.chat(question));
  assert.equal(transport.calls[0].request.headers['x-client-timeout-ms'], '230000');
});

test('an attempt that outlives its own timeout is aborted and, being slow, not retried', async () => {
  const { clock, transport, client } = setup([{ ms: 0, hang: true }], { attemptTimeoutMs: 40_000 });
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(transport.calls[0].request.signal.aborted, true);
  assert.equal(clock.now(), 40_000);
  assert.equal(err.status, 0);
  assert.equal(err.code, 'attempt_timeout');
  assert.equal(err.timeout, true);
  assert.equal(err.message, 'The service did not answer within 40 s. It took 40 s, so it was not retried.');
});

test('a fast network error is retried', async () => {
  const { clock, transport, client } = setup([{ ms: 5, error: new TypeError('Failed to fetch') }, { ms: 5, response: ok }]);
  await settle(clock, client.chat(question));
  assert.equal(transport.calls.length, 2);
});

test("the caller's signal cancels the attempt in flight at once", async () => {
  const { clock, transport, client } = setup([{ ms: 0, hang: true }]);
  const caller = new AbortController();
  clock.setTimer(1_000, () => caller.abort(new Error('user left')));
  await assert.rejects(settle(clock, client.chat(question, { signal: caller.signal })), /user left/);
  assert.equal(clock.now(), 1_000);
  assert.equal(transport.calls.length, 1);
  assert.equal(transport.calls[0].request.signal.aborted, true);
  assert.equal(clock.pending, 0, 'the attempt timer is cancelled');
});

test("the caller's signal cancels the backoff at once", async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: gateway(429, { 'Retry-After': '20' }) }, { ms: 10, response: ok }]);
  const caller = new AbortController();
  clock.setTimer(5_000, () => caller.abort(new Error('cancelled')));
  await assert.rejects(settle(clock, client.chat(question, { signal: caller.signal })), /cancelled/);
  assert.equal(clock.now(), 5_000);
  assert.equal(transport.calls.length, 1);
  assert.equal(clock.pending, 0, 'the backoff timer is cancelled');
});

test('an already aborted signal sends nothing', async () => {
  const { clock, transport, client } = setup([{ ms: 10, response: ok }]);
  await assert.rejects(settle(clock, client.chat(question, { signal: AbortSignal.abort() })));
  assert.equal(transport.calls.length, 0);
});

test('a throwing onAttempt hook does not change the outcome', async () => {
  const { clock, client } = setup([{ ms: 10, response: ok }], { onAttempt: () => { throw new Error('telemetry down'); } });
  const answer = await settle(clock, client.chat(question));
  assert.equal(answer.answer, 'Paris.');
});

test('a 2xx that is not JSON is an invalid_response', async () => {
  const { clock, client } = setup([{ ms: 10, response: reply(200, '<html>') }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.equal(err.code, 'invalid_response');
});

test('spfxTransport calls post(url, configuration, options) and get for health', async () => {
  const clock = new FakeClock();
  const configuration = { flags: 'v1' };
  const seen: { verb: string; url: string; configuration: unknown; options: { headers: Record<string, string>; body?: string; signal: AbortSignal } }[] = [];
  const aad = {
    post: async (url: string, c: unknown, options: { headers: Record<string, string>; body?: string; signal: AbortSignal }): Promise<ResponseLike> => {
      seen.push({ verb: 'post', url, configuration: c, options });
      return seen.length === 1 ? gateway(503) : ok;
    },
    get: async (url: string, c: unknown, options: { headers: Record<string, string>; signal: AbortSignal }): Promise<ResponseLike> => {
      seen.push({ verb: 'get', url, configuration: c, options });
      return reply(200, { status: 'ok' });
    },
  };
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport: spfxTransport(aad, configuration), clock, policy: { random: () => 0 } });
  const answer = await settle(clock, client.chat(question));
  assert.equal(answer.answer, 'Paris.');
  const health = await settle(clock, client.health());
  assert.equal(health.status, 'ok');
  assert.deepEqual(seen.map((s) => s.verb), ['post', 'post', 'get']);
  assert.ok(seen.every((s) => s.configuration === configuration));
  assert.equal(seen[0].url, 'https://app.example/api/chat');
  assert.equal(seen[2].url, 'https://app.example/api/health');
  assert.equal(seen[0].options.headers['content-type'], 'application/json');
  assert.equal(seen[2].options.body, undefined);
  assert.ok(seen[0].options.signal instanceof AbortSignal);
});

test("spfxTransport hands a page-leaving cancel's keepalive to AadHttpClient, and nothing else gets it", async () => {
  const clock = new FakeClock();
  const seen: { url: string; keepalive?: boolean }[] = [];
  const aad = {
    post: async (url: string, _c: unknown, options: { keepalive?: boolean }): Promise<ResponseLike> => {
      seen.push({ url, keepalive: options.keepalive });
      return url.endsWith('/cancel') ? reply(204, '') : ok;
    },
  };
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport: spfxTransport(aad, {}), clock });
  await settle(clock, client.chat(question));
  await settle(clock, client.cancel('c9', { keepalive: true }));
  assert.deepEqual(seen, [
    { url: 'https://app.example/api/chat', keepalive: undefined },
    { url: 'https://app.example/api/chat/cancel', keepalive: true },
  ]);
});
