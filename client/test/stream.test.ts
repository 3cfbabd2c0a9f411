// chatStream and chatEvents on the virtual clock, with real fetch Responses
// whose bodies stream on that clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, aadTokenTransport, type AttemptEvent, type ChatStreamEvent, type TransportRequest } from '../src/index.js';
import { FakeClock, rejection, reply, scripted, settle, sse, streamed, type Chunk, type Step, type StreamedBody } from './fakes.js';

const question = { messages: [{ role: 'user' as const, content: 'Count to three.' }] };
const done = { answer: 'One, two, three.', finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 6, totalTokens: 15 }, requestId: 'r-s', elapsedMs: 900, upstreamAttempts: 1, truncated: false };
const gateway = (status: number) => reply(status, { error: { code: 'upstream_unavailable', message: 'The AI service is busy.', requestId: 'r-' + status } });
const threeDeltas: Chunk[] = [
  { ms: 100, text: sse('delta', { text: 'One, ' }) },
  { ms: 100, text: sse('delta', { text: 'two, ' }) },
  { ms: 100, text: sse('delta', { text: 'three.' }) },
];

function setup(steps: Step[], options: Partial<ConstructorParameters<typeof TimeboxClient>[0]> = {}) {
  const clock = new FakeClock();
  const transport = scripted(clock, steps);
  const events: AttemptEvent[] = [];
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport, clock, policy: { random: () => 0 }, onAttempt: (e) => events.push(e), ...options });
  return { clock, transport, events, client };
}

/** A step whose answer is a streamed body on the clock, made when it is due; `bodies` collects them. */
function streaming(clock: FakeClock, bodies: StreamedBody[], ms: number, chunks: Chunk[]): Step {
  return { ms, respond: () => {
    const b = streamed(clock, chunks);
    bodies.push(b);
    return b.response;
  } };
}

test('deltas arrive as they are written, then the call resolves with done', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [streaming(clock, bodies, 50, [...threeDeltas, { ms: 10, text: sse('done', done), close: true }])]);
  const heard: [string, string, number][] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (text, soFar) => heard.push([text, soFar, clock.now()]) }));
  assert.deepEqual(heard, [['One, ', 'One, ', 150], ['two, ', 'One, two, ', 250], ['three.', 'One, two, three.', 350]]);
  assert.deepEqual(answer, done);
  assert.equal(transport.calls.length, 1);
  assert.equal(transport.calls[0].request.headers.accept, 'text/event-stream');
  assert.equal(transport.calls[0].request.headers['content-type'], 'application/json');
  assert.deepEqual(events.map((e) => [e.attempt, e.status, e.decision, e.elapsedMs, e.requestId]), [[1, 200, 'success', 360, 'r-s']]);
});

function setupOn(clock: FakeClock, steps: Step[], options: Partial<ConstructorParameters<typeof TimeboxClient>[0]> = {}) {
  const transport = scripted(clock, steps);
  const events: AttemptEvent[] = [];
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport, clock, policy: { random: () => 0 }, onAttempt: (e) => events.push(e), ...options });
  return { transport, events, client };
}

test('events split anywhere, several in one chunk, CRLF and keep-alive comments read the same', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const wire = `: keep-alive\r\n\r\n${sse('delta', { text: 'Grüße, ' })}${sse('delta', { text: '世界 🌍' })}`.replace(/\n/g, '\r\n') + sse('done', { ...done, answer: 'Grüße, 世界 🌍' });
  const bytes = new TextEncoder().encode(wire);
  // One byte at a time: every line, every CRLF and every multi-byte character is split.
  const chunks: Chunk[] = [...bytes].map((b) => ({ ms: 1, bytes: Uint8Array.of(b) }));
  chunks.push({ ms: 0, close: true });
  const { client } = setupOn(clock, [streaming(clock, bodies, 10, chunks)]);
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.deepEqual(heard, ['Grüße, ', '世界 🌍']);
  assert.equal(answer.answer, 'Grüße, 世界 🌍');
});

test('a fast 503 before the stream starts is retried, as for chat', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [{ ms: 200, response: gateway(503) }, streaming(clock, bodies, 50, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }])]);
  const answer = await settle(clock, client.chatStream(question));
  assert.equal(answer.answer, done.answer);
  assert.equal(transport.calls.length, 2);
  assert.deepEqual(events.map((e) => e.decision), ['retry', 'success']);
});

test('a slow 504 before the stream starts is a timeout: not retried', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [{ ms: 30_000, response: gateway(504) }, streaming(clock, bodies, 50, threeDeltas)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'slow_failure');
  assert.equal(err.partial, undefined);
});

test('a body that breaks before the first piece is a fast network error: retried', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [
    streaming(clock, bodies, 50, [{ ms: 100, text: ': keep-alive\n\n' }, { ms: 100, error: new TypeError('network error') }]),
    streaming(clock, bodies, 50, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }]),
  ]);
  const answer = await settle(clock, client.chatStream(question));
  assert.equal(answer.answer, done.answer);
  assert.equal(transport.calls.length, 2);
  assert.deepEqual(events.map((e) => [e.status, e.decision]), [[0, 'retry'], [200, 'success']]);
});

test('a body closed before the first piece (no done, no error) is retried too', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 50, [{ ms: 10, close: true }]), streaming(clock, bodies, 50, [{ ms: 0, text: sse('done', done), close: true }])]);
  await settle(clock, client.chatStream(question));
  assert.equal(transport.calls.length, 2);
});

test('a fast break after the first piece is never retried: the text so far is on the error', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [
    streaming(clock, bodies, 50, [...threeDeltas.slice(0, 2), { ms: 10, error: new TypeError('network error') }]),
    streaming(clock, bodies, 50, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }]),
  ]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'stream_failed');
  assert.equal(err.code, 'stream_interrupted');
  assert.equal(err.status, 200);
  assert.deepEqual(err.partial, { answer: 'One, two, ' });
  assert.equal(err.message, 'The connection to the service was lost before the answer was complete.');
  assert.deepEqual(events.map((e) => [e.decision, e.retry]), [['stream_failed', false]]);
});

test('a body closed after some text without done is cut off, not retried', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 50, [...threeDeltas.slice(0, 1), { ms: 10, close: true }]), streaming(clock, bodies, 50, threeDeltas)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'stream_interrupted');
  assert.deepEqual(err.partial, { answer: 'One, ' });
});

test("the server's error event ends the call with its code and message, the text so far, and no retry", async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const error = { error: { code: 'deadline_exceeded', message: 'The answer took too long; here is what was written so far.', requestId: 'r-d' }, partial: true };
  const { transport, events, client } = setupOn(clock, [streaming(clock, bodies, 50, [...threeDeltas.slice(0, 2), { ms: 199_000, text: sse('error', error), close: true }]), streaming(clock, bodies, 50, threeDeltas)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'deadline_exceeded');
  assert.equal(err.timeout, true);
  assert.equal(err.message, error.error.message);
  assert.equal(err.serverMessage, error.error.message);
  assert.equal(err.requestId, 'r-d');
  assert.deepEqual(err.partial, { answer: 'One, two, ' });
  assert.equal(err.reason, 'stream_failed');
  assert.deepEqual(events.map((e) => [e.decision, e.code, e.timeout]), [['stream_failed', 'deadline_exceeded', true]]);
});

test('an error event before any text is final too (the server chose to answer 200)', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const error = { error: { code: 'content_filter', message: 'The answer was blocked by the content filter.', requestId: 'r-f' }, partial: true };
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 50, [{ ms: 10, text: sse('error', error), close: true }]), streaming(clock, bodies, 50, threeDeltas)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'content_filter');
  assert.equal(err.partial, undefined);
});

// The server's error event before the first piece (after its 15 s
// keep-alive committed the 200) carries the JSON answer's status and hints
// (docs/api.md): the attempt failed before its first token and is judged by
// the rule as that answer, timed from sending to the event.
const earlyError = (status: number, code: string, hints: { shouldRetry?: boolean; retryAfterMs?: number } = {}) =>
  ({ error: { code, message: `The AI service said ${status}.`, requestId: 'r-e' }, partial: false, status, shouldRetry: true, ...hints });
const afterKeepAlive = (clock: FakeClock, bodies: StreamedBody[], atMs: number, data: unknown): Step =>
  streaming(clock, bodies, 10, [{ ms: 15_000, text: ': keep-alive\n\n' }, { ms: atMs - 15_010, text: sse('error', data), close: true }]);
const answered = (clock: FakeClock, bodies: StreamedBody[]) => streaming(clock, bodies, 50, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }]);

test('a 503 at 20 s after a keep-alive failed fast before its first piece: retried, as the JSON 503 is', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 20_000, earlyError(503, 'upstream_unavailable')), answered(clock, bodies)]);
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.equal(answer.answer, done.answer);
  assert.equal(heard.join(''), done.answer, 'the text once: nothing was shown before the retry');
  assert.equal(transport.calls.length, 2);
  assert.deepEqual(events.map((e) => [e.status, e.decision, e.elapsedMs, e.code]), [[503, 'retry', 20_000, 'upstream_unavailable'], [200, 'success', 350, undefined]]);
});

test('a failure at 40 s after keep-alives is slow: not retried, whether the server says so (500) or the clock does (503)', async () => {
  for (const [data, reason] of [
    [earlyError(500, 'upstream_error', { shouldRetry: false }), 'not_retryable'],
    [earlyError(503, 'upstream_unavailable'), 'slow_failure'],
  ] as const) {
    const clock = new FakeClock();
    const bodies: StreamedBody[] = [];
    const { transport, events, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 40_000, data), answered(clock, bodies)]);
    const err = await rejection(settle(clock, client.chatStream(question)));
    assert.equal(transport.calls.length, 1, data.error.code);
    assert.equal(err.reason, reason);
    assert.equal(err.status, data.status);
    assert.equal(err.code, data.error.code);
    assert.equal(err.serverMessage, data.error.message);
    assert.equal(err.requestId, 'r-e');
    assert.equal(err.timeout, reason === 'slow_failure');
    assert.equal(err.partial, undefined);
    assert.deepEqual(events.map((e) => [e.status, e.decision, e.elapsedMs]), [[data.status, reason, 40_000]]);
  }
});

test("an early error event's hints are the JSON answer's headers: shouldRetry false stops, retryAfterMs is the wait", async () => {
  {
    const clock = new FakeClock();
    const bodies: StreamedBody[] = [];
    const { transport, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 20_000, earlyError(503, 'upstream_unavailable', { shouldRetry: false })), answered(clock, bodies)]);
    const err = await rejection(settle(clock, client.chatStream(question)));
    assert.equal(transport.calls.length, 1);
    assert.equal(err.reason, 'should_not_retry');
  }
  {
    const clock = new FakeClock();
    const bodies: StreamedBody[] = [];
    const { transport, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 20_000, earlyError(429, 'rate_limited', { retryAfterMs: 7_000 })), answered(clock, bodies)]);
    const answer = await settle(clock, client.chatStream(question));
    assert.equal(answer.answer, done.answer);
    assert.deepEqual(transport.calls.map((c) => c.at), [0, 27_000], 'asked again 7 s after the event');
  }
  {
    const clock = new FakeClock();
    const bodies: StreamedBody[] = [];
    const { transport, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 20_000, earlyError(429, 'rate_limited', { retryAfterMs: 45_000 })), answered(clock, bodies)]);
    const err = await rejection(settle(clock, client.chatStream(question)));
    assert.equal(transport.calls.length, 1);
    assert.equal(err.reason, 'wait_too_long');
    assert.equal(err.retryAfterMs, 45_000);
  }
});

test('an early error event that does not say partial: false, or garbles a hint, is final', async () => {
  const base = earlyError(503, 'upstream_unavailable');
  for (const data of [{ ...base, partial: undefined }, { ...base, partial: 'no' }, { ...base, shouldRetry: 'false' }, { ...base, retryAfterMs: '7000' }]) {
    const clock = new FakeClock();
    const bodies: StreamedBody[] = [];
    const { transport, client } = setupOn(clock, [afterKeepAlive(clock, bodies, 20_000, data), answered(clock, bodies)]);
    const err = await rejection(settle(clock, client.chatStream(question)));
    assert.equal(transport.calls.length, 1, JSON.stringify(data));
    assert.equal(err.reason, 'stream_failed');
    assert.equal(err.status, 200);
  }
});

test('an error event after the first piece is never retried, even one that claims partial: false and a 503', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [
    streaming(clock, bodies, 50, [...threeDeltas.slice(0, 1), { ms: 100, text: sse('error', earlyError(503, 'upstream_unavailable')), close: true }]),
    answered(clock, bodies),
  ]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.reason, 'stream_failed');
  assert.deepEqual(err.partial, { answer: 'One, ' });
  assert.deepEqual(events.map((e) => [e.decision, e.retry]), [['stream_failed', false]]);
});

test("the attempt's own timeout after the first piece ends the stream: attempt_timeout, partial, no retry", async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 50, threeDeltas.slice(0, 1)), streaming(clock, bodies, 50, threeDeltas)], { attemptTimeoutMs: 5_000 });
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(clock.now(), 5_000);
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'attempt_timeout');
  assert.equal(err.timeout, true);
  assert.deepEqual(err.partial, { answer: 'One, ' });
  assert.equal(bodies[0].cancelled(), true, 'the body is cancelled: the connection closes');
  assert.equal(transport.calls[0].request.signal.aborted, true);
});

test("the caller's signal ends the stream and the connection at once; the attempt is reported cancelled", async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [streaming(clock, bodies, 50, threeDeltas)]);
  const caller = new AbortController();
  const heard: string[] = [];
  const call = client.chatStream(question, { signal: caller.signal, onDelta: (t) => {
    heard.push(t);
    if (heard.length === 2) clock.setTimer(20, () => caller.abort(new DOMException('Cancelled by the user.', 'AbortError')));
  } });
  await assert.rejects(settle(clock, call), /Cancelled by the user/);
  assert.equal(clock.now(), 270);
  assert.deepEqual(heard, ['One, ', 'two, ']);
  assert.equal(transport.calls[0].request.signal.aborted, true);
  assert.equal(bodies[0].cancelled(), true);
  assert.equal(clock.pending, 0, 'no timer left: not the attempt timer, not the body');
  assert.deepEqual(events.map((e) => [e.decision, e.status, e.elapsedMs, e.retry]), [['cancelled', 200, 270, false]]);
});

test('keep-alive comments through a slow first piece are not text, and a 15 s silence is not a failure', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 10, [
    { ms: 15_000, text: ': keep-alive\n\n' }, { ms: 15_000, text: ': keep-alive\n\n' }, { ms: 15_000, text: ': keep-alive\n\n' },
    ...threeDeltas, { ms: 0, text: sse('done', done), close: true },
  ])]);
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.equal(heard.join(''), done.answer);
  assert.equal(answer.answer, done.answer);
  assert.equal(transport.calls.length, 1);
});

test('done ends the call even when the server keeps the body open', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { client } = setupOn(clock, [streaming(clock, bodies, 10, [...threeDeltas, { ms: 10, text: sse('done', done) }])]);
  const answer = await settle(clock, client.chatStream(question));
  assert.equal(answer.answer, done.answer);
  assert.equal(clock.now(), 320);
  assert.equal(bodies[0].cancelled(), true);
});

test('a JSON 200 to a stream request (a server or proxy that does not stream) is one piece', async () => {
  const clock = new FakeClock();
  const { client } = setupOn(clock, [{ ms: 10, response: reply(200, done, { 'content-type': 'application/json' }) }]);
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.deepEqual(heard, [done.answer]);
  assert.deepEqual(answer, done);
});

test('a transport without a body stream (SPFx HttpClient) still gets every event, at the end', async () => {
  const clock = new FakeClock();
  const text = threeDeltas.map((c) => c.text).join('') + sse('done', done);
  const { client } = setupOn(clock, [{ ms: 10, response: reply(200, text, { 'content-type': 'text/event-stream; charset=utf-8' }) }]);
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.deepEqual(heard, ['One, ', 'two, ', 'three.']);
  assert.equal(answer.answer, done.answer);
});

test('a malformed delta is an invalid_response, not retried', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 10, [{ ms: 10, text: 'event: delta\ndata: {"text":1}\n\n', close: true }]), streaming(clock, bodies, 10, threeDeltas)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'invalid_response');
  assert.equal(err.reason, 'invalid_response');
});

test('an event larger than the limit ends the stream instead of growing memory', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const mib = 'x'.repeat(1024 * 1024);
  const chunks: Chunk[] = [{ ms: 10, text: sse('delta', { text: 'Hi ' }) }, { ms: 10, text: 'event: delta\ndata: ' }];
  for (let i = 0; i < 9; i++) chunks.push({ ms: 1, text: mib });
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 10, chunks)]);
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(transport.calls.length, 1);
  assert.equal(err.code, 'invalid_response');
  assert.deepEqual(err.partial, { answer: 'Hi ' });
  assert.equal(bodies[0].cancelled(), true);
});

test('an exception from onDelta ends the stream and the call rejects with it', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, client } = setupOn(clock, [streaming(clock, bodies, 10, threeDeltas)]);
  const call = client.chatStream(question, { onDelta: () => { throw new RangeError('render failed'); } });
  await assert.rejects(settle(clock, call), RangeError);
  assert.equal(transport.calls.length, 1);
  assert.equal(bodies[0].cancelled(), true);
});

test('chatEvents yields each piece, then done', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { client } = setupOn(clock, [streaming(clock, bodies, 10, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }])]);
  const seen: ChatStreamEvent[] = [];
  await settle(clock, (async () => {
    for await (const e of client.chatEvents(question)) seen.push(e);
  })());
  assert.deepEqual(seen, [{ type: 'delta', text: 'One, ' }, { type: 'delta', text: 'two, ' }, { type: 'delta', text: 'three.' }, { type: 'done', response: done }]);
});

test('leaving the chatEvents loop early cancels the stream and the request', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const { transport, events, client } = setupOn(clock, [streaming(clock, bodies, 10, threeDeltas)]);
  const seen: string[] = [];
  await settle(clock, (async () => {
    for await (const e of client.chatEvents(question)) {
      if (e.type === 'delta') seen.push(e.text);
      break;
    }
  })());
  await settle(clock, Promise.resolve());
  assert.deepEqual(seen, ['One, ']);
  assert.equal(transport.calls[0].request.signal.aborted, true);
  assert.equal(bodies[0].cancelled(), true);
  assert.equal(clock.pending, 0);
  assert.deepEqual(events.map((e) => e.decision), ['cancelled']);
});

test('chatEvents throws what chatStream rejects with', async () => {
  const clock = new FakeClock();
  const bodies: StreamedBody[] = [];
  const error = { error: { code: 'upstream_error', message: 'The AI service broke off the answer.', requestId: 'r-u' }, partial: true };
  const { client } = setupOn(clock, [streaming(clock, bodies, 10, [...threeDeltas.slice(0, 1), { ms: 10, text: sse('error', error), close: true }])]);
  const seen: string[] = [];
  const err = await rejection(settle(clock, (async () => {
    for await (const e of client.chatEvents(question)) if (e.type === 'delta') seen.push(e.text);
  })()));
  assert.deepEqual(seen, ['One, ']);
  assert.equal(err.code, 'upstream_error');
  assert.deepEqual(err.partial, { answer: 'One, ' });
});

test("chat: the server's 500 deadline_exceeded carries the partial answer", async () => {
  const body = { error: { code: 'deadline_exceeded', message: 'The answer took too long.', requestId: 'r-p' }, partial: { answer: 'One, two', completionTokens: 3 } };
  const { clock, client } = setup([{ ms: 200_000, response: reply(500, body, { 'x-should-retry': 'false' }) }]);
  const err = await rejection(settle(clock, client.chat(question)));
  assert.deepEqual(err.partial, { answer: 'One, two', completionTokens: 3 });
  assert.equal(err.timeout, true);
  const none = setup([{ ms: 200_000, response: reply(500, { error: body.error }, { 'x-should-retry': 'false' }) }]);
  assert.equal((await rejection(settle(none.clock, none.client.chat(question)))).partial, undefined);
});

test('aadTokenTransport asks the token provider before every attempt and streams with fetch', async () => {
  const clock = new FakeClock();
  const asked: string[] = [];
  const provider = { getToken: async (resource: string) => (asked.push(resource), `tok-${asked.length}`) };
  const sent: { url: string; init: TransportRequest }[] = [];
  const fetchImpl = async (url: string, init: TransportRequest) => {
    sent.push({ url, init });
    if (sent.length === 1) return gateway(503);
    return streamed(clock, [...threeDeltas, { ms: 0, text: sse('done', done), close: true }]).response;
  };
  const client = new TimeboxClient({ baseUrl: 'https://app.example', clock, policy: { random: () => 0 }, transport: aadTokenTransport(provider, 'api://timebox', fetchImpl) });
  const heard: string[] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t) => heard.push(t) }));
  assert.equal(answer.answer, done.answer);
  assert.deepEqual(heard, ['One, ', 'two, ', 'three.']);
  assert.deepEqual(asked, ['api://timebox', 'api://timebox']);
  assert.deepEqual(sent.map((s) => s.init.headers.authorization), ['Bearer tok-1', 'Bearer tok-2']);
  assert.equal(sent[1].url, 'https://app.example/api/chat');
  assert.equal(sent[1].init.method, 'POST');
  assert.equal(sent[1].init.headers.accept, 'text/event-stream');
  assert.deepEqual(JSON.parse(sent[1].init.body!), question);
  assert.ok(sent[1].init.signal instanceof AbortSignal);
});

test('aadTokenTransport: a token that cannot be had sends nothing and fails the attempt', async () => {
  const clock = new FakeClock();
  let fetched = 0;
  const provider = { getToken: async () => { throw new Error('AADSTS65001: consent required'); } };
  const client = new TimeboxClient({ baseUrl: 'https://app.example', clock, policy: { random: () => 0 }, transport: aadTokenTransport(provider, 'api://timebox', async () => (fetched++, reply(200, done))) });
  const err = await rejection(settle(clock, client.chatStream(question)));
  assert.equal(fetched, 0);
  assert.equal(err.status, 0);
});
