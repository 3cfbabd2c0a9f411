// The official OpenAI SDK for JavaScript (openai on npm, pinned in
// package-lock.json) in Node, unchanged but for its base URL, against the
// real handler and simulator: timebox's OpenAI surface answers it, and the
// SDK's own retries obey timebox's rule (x-should-retry). Upstream calls are
// counted from the simulator's log, one line per request it answered.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { startStack } from '../../e2e/harness.mjs';
import { assertDeadline, assertFast503Retried, assertLong429Surfaced, assertMidStreamCut, assertToolCall, countedCalls, TOOLS, WEATHER } from './counted.mjs';

let stack;
let client;

before(async () => {
  stack = await startStack();
  client = new OpenAI({ baseURL: `${stack.api}/openai/v1`, apiKey: 'unused: timebox takes no API key' });
});

after(async () => {
  await stack?.stop();
});

const counted = (fn, want) => countedCalls(stack, fn, want);
const ask = (content, extra) => client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

test('an answer', async () => {
  const { result, upstream, log } = await counted(() => ask('Count to 5.'));
  assert.equal(result.object, 'chat.completion');
  assert.equal(result.choices[0].message.content, '1, 2, 3, 4, 5.');
  assert.equal(result.choices[0].finish_reason, 'stop');
  assert.ok(result.usage.prompt_tokens > 0 && result.usage.completion_tokens > 0);
  assert.equal(upstream.length, 1);
  assert.equal(log[0].status, 200);
});

test('a stream', async () => {
  const { result, upstream } = await counted(async () => {
    const stream = await ask('Count to 20.', { stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      usage ??= chunk.usage ?? undefined;
    }
    return { text, usage, chunks };
  });
  assert.equal(result.text, Array.from({ length: 20 }, (_, i) => i + 1).join(', ') + '.');
  assert.ok(result.chunks > 10, `streamed in pieces, got ${result.chunks} chunks`);
  assert.ok(result.usage?.completion_tokens > 0, 'the usage chunk, asked for');
  assert.equal(upstream.length, 1);
});

test('a tool call, and its result answered', async () => {
  const first = await assertToolCall(stack, ask);
  const call = first.choices[0].message.tool_calls[0];

  // The SDK's own round trip: the answer's message back as it came, then the tool's result.
  const messages = [{ role: 'user', content: WEATHER }, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 °C.' }];
  const { result: second } = await counted(() => client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: TOOLS }));
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.ok(second.choices[0].message.content.length > 0);

  // Streamed, the call's pieces pass through as delta.tool_calls.
  const { result: streamed } = await counted(async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages.slice(0, 1), tools: TOOLS, stream: true });
    let args = '';
    let name = '';
    let finish;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      finish ??= chunk.choices[0]?.finish_reason ?? undefined;
    }
    return { name, args, finish };
  });
  assert.equal(streamed.name, 'get_weather');
  assert.deepEqual(JSON.parse(streamed.args), { question: WEATHER });
  assert.equal(streamed.finish, 'tool_calls');
});

test('the deadline: one upstream call, and the SDK error carries timebox\'s message and code', () => assertDeadline(stack, ask));

test('a stream runs past the SDK\'s timeout once begun: the timeout ends with the headers', async () => {
  // timeout 3000 (the least counted, sent as X-Stainless-Timeout: 3); counting to 100 at 10 ms a token takes longer.
  const { result, error, upstream } = await counted(async () => {
    const start = performance.now();
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Count to 100.' }], stream: true }, { timeout: 3000 });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    return { text, took: performance.now() - start };
  });
  assert.equal(error, undefined);
  assert.equal(result.text, Array.from({ length: 100 }, (_, i) => i + 1).join(', ') + '.');
  assert.ok(result.took > 3000, `the stream outlasted the timeout, took ${result.took} ms`);
  assert.equal(upstream.length, 1);
});

test('a stream whose first frame is late: the deadline\'s 500 before the SDK\'s timeout, not retried', async () => {
  const { error, upstream } = await counted(() => client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[sim:hang]] hi' }], stream: true }, { timeout: 3000 }));
  assert.ok(error instanceof OpenAI.InternalServerError, `a 500, got ${error}`);
  assert.equal(error.code, 'deadline_exceeded');
  assert.equal(error.headers.get('x-should-retry'), 'false');
  assert.equal(upstream.length, 1, 'the SDK did not retry the deadline');
});

test('a fast 503 is retried by the SDK, then answered: two upstream calls', () => assertFast503Retried(stack, ask, 'node-503'));

test('a 429 whose wait does not fit is surfaced at once: one upstream call', () => assertLong429Surfaced(stack, ask, 'node-429'));

test('a mid-stream cut is raised by the SDK as an error, after the text so far', () => assertMidStreamCut(stack, ask));

test('a model this service does not serve is 404 model_not_found, with no upstream call', async () => {
  const simFrom = stack.simulator.lines.length;
  await assert.rejects(client.chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }] }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError);
    assert.equal(err.code, 'model_not_found');
    return true;
  });
  assert.equal(stack.upstreamLog(simFrom).length, 0);
});

test('an unknown parameter is refused as OpenAI refuses it', async () => {
  await assert.rejects(ask('hi', { logprobs: true }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.code, 'unknown_parameter');
    assert.equal(err.param, 'logprobs');
    return true;
  });
});

test('the models list names the deployment', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes('gpt-4o-mini'), `got ${ids}`);
});
