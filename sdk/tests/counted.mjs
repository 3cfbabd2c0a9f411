// countedCalls: what an SDK call did, counted from the logs of the stack
// (e2e/harness.mjs) it ran against; and the cases every Node client is
// checked with over it.
import assert from 'node:assert/strict';
import { APIError, InternalServerError, RateLimitError } from 'openai';

/**
 * Runs fn and returns what it returned or threw, the handler's log lines for
 * the requests it made under /openai/ and the simulator's for the upstream
 * calls, once `requests` and `upstream` of them are written (a cancelled
 * upstream call is logged when the simulator sees the cancellation, after
 * the answer).
 */
export async function countedCalls(stack, fn, { requests = 1, upstream = 1 } = {}) {
  const simFrom = stack.simulator.lines.length;
  const logFrom = stack.handler.lines.length;
  let result;
  let error;
  try {
    result = await fn();
  } catch (err) {
    error = err;
  }
  await stack.waitForRequestLogs((l) => l.route?.startsWith('/openai/'), requests, { from: logFrom });
  await stack.waitForUpstreamLogs(upstream, { from: simFrom });
  return { result, error, upstream: stack.upstreamLog(simFrom), log: stack.requestLog(logFrom).filter((l) => l.route?.startsWith('/openai/')) };
}

/** A question, and the tool the simulator answers it with a call of (its arguments: the question). */
export const WEATHER = 'What is the weather in Paris?';
export const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city.', parameters: { type: 'object', properties: { question: { type: 'string' } } } } }];

// The cases every Node client is checked with. Each takes ask(content, extra),
// the client's chat.completions.create of one user message (extra: the rest
// of the body, such as tools or stream).

/**
 * The weather question, with TOOLS, is answered by a call of get_weather
 * whose arguments are the question; returns the answer, for a round trip.
 */
export async function assertToolCall(stack, ask) {
  const { result, error } = await countedCalls(stack, () => ask(WEATHER, { tools: TOOLS }));
  assert.equal(error, undefined);
  const call = result.choices[0].message.tool_calls?.[0];
  assert.equal(result.choices[0].finish_reason, 'tool_calls');
  assert.equal(call?.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { question: WEATHER });
  return result;
}

/** The deadline is one upstream call, not retried, and the SDK's error carries timebox's message and code. */
export async function assertDeadline(stack, ask) {
  const { error, upstream, log } = await countedCalls(stack, () => ask('[[sim:hang]] hi'));
  assert.ok(error instanceof InternalServerError, `a 500, got ${error}`);
  assert.equal(error.status, 500);
  assert.equal(error.code, 'deadline_exceeded');
  assert.match(error.message, /did not answer in time/);
  assert.equal(error.headers.get('x-should-retry'), 'false');
  assert.equal(upstream.length, 1, 'the SDK did not retry the deadline');
  assert.equal(log.length, 1);
}

/** A fast 503 (the simulator's, once, under id) is retried by the SDK, then answered: two upstream calls. */
export async function assertFast503Retried(stack, ask, id) {
  const { result, upstream, log } = await countedCalls(stack, () => ask(`[[sim:status code=503 times=1 id=${id}]] Count to 3.`), { requests: 2, upstream: 2 });
  assert.equal(result.choices[0].message.content, '1, 2, 3.');
  assert.deepEqual(upstream.map((u) => u.status), [503, 200]);
  assert.deepEqual(log.map((l) => l.status), [503, 200]);
}

/** A 429 (the simulator's, once, under id) whose 20 s wait does not fit is surfaced at once: one upstream call. */
export async function assertLong429Surfaced(stack, ask, id) {
  const { error, upstream } = await countedCalls(stack, () => ask(`[[sim:throttle s=20 times=1 id=${id}]] hi`));
  assert.ok(error instanceof RateLimitError, `a 429, got ${error}`);
  assert.equal(error.code, 'rate_limited');
  assert.equal(error.headers.get('x-should-retry'), 'false');
  assert.equal(error.headers.get('retry-after'), '20');
  assert.equal(upstream.length, 1);
}

/**
 * A stream the simulator cuts after 10 tokens is raised by the SDK as an
 * APIError upstream_error after the text so far, from one upstream call.
 */
export async function assertMidStreamCut(stack, ask) {
  const { result, upstream } = await countedCalls(stack, async () => {
    const stream = await ask('[[sim:reset tokens=10]] Count to 50.', { stream: true });
    let text = '';
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    } catch (err) {
      return { text, err };
    }
    return { text };
  });
  assert.ok(result.err instanceof APIError, `an APIError, got ${result.err}`);
  assert.equal(result.err.code, 'upstream_error');
  assert.match(result.text, /^1, 2, 3/, 'the text so far arrived first');
  assert.equal(upstream.length, 1);
}
