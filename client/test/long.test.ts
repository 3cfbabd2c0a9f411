// Long answers across hops (docs/api.md, "Long answers"): chat() follows
// 202s and chatStream() continue events, on the virtual clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, type AttemptEvent } from '../src/index.js';
import { FakeClock, reply, scripted, settle, sse, streamed, type Step } from './fakes.js';

const question = { messages: [{ role: 'user' as const, content: 'Write a long story.' }] };
const done = { answer: 'One, two, three.', finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 6, totalTokens: 15 }, requestId: 'r-3', elapsedMs: 900, upstreamAttempts: 1, truncated: false };

function setup(clock: FakeClock, steps: Step[]) {
  const transport = scripted(clock, steps);
  const events: AttemptEvent[] = [];
  const client = new TimeboxClient({ baseUrl: 'https://app.example', transport, clock, policy: { random: () => 0 }, onAttempt: (e) => events.push(e) });
  return { transport, events, client };
}

function body(call: { request: { body?: string } }): unknown {
  return JSON.parse(call.request.body ?? 'null');
}

test('chatStream follows continue events: one text, each hop reported, each continue sends its cursor', async () => {
  const clock = new FakeClock();
  const hop = (chunks: { ms: number; text: string; close?: boolean }[]): Step => ({ ms: 10, respond: () => streamed(clock, chunks).response });
  const { transport, events, client } = setup(clock, [
    hop([{ ms: 100, text: sse('delta', { text: 'One, ' }) }, { ms: 100, text: sse('continue', { cursor: 'c2' }), close: true }]),
    { ms: 10, response: reply(503, { error: { code: 'upstream_unavailable', message: 'busy', requestId: 'r-503' } }) },
    hop([{ ms: 100, text: sse('delta', { text: 'two, ' }) }, { ms: 100, text: sse('continue', { cursor: 'c3' }), close: true }]),
    hop([{ ms: 100, text: sse('delta', { text: 'three.' }) }, { ms: 10, text: sse('done', done), close: true }]),
  ]);
  const heard: [string, string][] = [];
  const hops: [number, string][] = [];
  const answer = await settle(clock, client.chatStream(question, { onDelta: (t, soFar) => heard.push([t, soFar]), onHop: (n, c) => hops.push([n, c]) }));
  assert.deepEqual(answer, done);
  assert.deepEqual(heard, [['One, ', 'One, '], ['two, ', 'One, two, '], ['three.', 'One, two, three.']]);
  assert.deepEqual(hops, [[2, 'c2'], [3, 'c3']]);
  assert.deepEqual(transport.calls.map((c) => c.url.replace('https://app.example', '')), ['/api/chat', '/api/chat/continue', '/api/chat/continue', '/api/chat/continue']);
  assert.deepEqual(transport.calls.slice(1).map(body), [{ cursor: 'c2' }, { cursor: 'c2' }, { cursor: 'c3' }], 'a fast 503 on a continue is retried with the same cursor');
  assert.deepEqual(events.map((e) => [e.hop, e.status, e.decision]), [[undefined, 200, 'success'], [2, 503, 'retry'], [2, 200, 'success'], [3, 200, 'success']]);
});

test('chat follows 202s until the 200', async () => {
  const clock = new FakeClock();
  const inProgress = (cursor: string, answer: string) => reply(202, { status: 'in_progress', cursor, partial: { answer } }, { 'retry-after': '1', 'retry-after-ms': '1000' });
  const { transport, client } = setup(clock, [
    { ms: 10, response: inProgress('c2', 'One, ') },
    { ms: 10, response: inProgress('c3', 'One, two, ') },
    { ms: 10, response: reply(200, done) },
  ]);
  const hops: number[] = [];
  const answer = await settle(clock, client.chat(question, { onHop: (n) => hops.push(n) }));
  assert.deepEqual(answer, done);
  assert.deepEqual(hops, [2, 3]);
  assert.deepEqual(transport.calls.slice(1).map(body), [{ cursor: 'c2' }, { cursor: 'c3' }]);
});

test('an abort between hops sends cancel with the last cursor, with keepalive', async () => {
  const clock = new FakeClock();
  const ac = new AbortController();
  const { transport, client } = setup(clock, [
    { ms: 10, response: reply(202, { status: 'in_progress', cursor: 'c2', partial: { answer: '' } }) },
    { ms: 10, response: reply(204, '') },
  ]);
  const p = client.chat(question, { signal: ac.signal, onHop: () => ac.abort(new Error('left')) });
  await assert.rejects(settle(clock, p));
  await settle(clock, Promise.resolve());
  const last = transport.calls[transport.calls.length - 1];
  assert.equal(last.url, 'https://app.example/api/chat/cancel');
  assert.deepEqual(body(last), { cursor: 'c2' });
  assert.equal(last.request.keepalive, true, 'the abort may be the page going away');
});

test('cancel with keepalive outlives the page', async () => {
  const clock = new FakeClock();
  const { transport, client } = setup(clock, [{ ms: 10, response: reply(204, '') }]);
  await settle(clock, client.cancel('c9', { keepalive: true }));
  assert.equal(transport.calls[0].url, 'https://app.example/api/chat/cancel');
  assert.equal(transport.calls[0].request.keepalive, true);
  assert.deepEqual(body(transport.calls[0]), { cursor: 'c9' });
});
