// countedCalls: what an SDK call did, counted from the logs of the stack
// (e2e/harness.mjs) it ran against; and the cases every Node client is
// checked with over it.
import assert from 'node:assert/strict';
import { APIError } from 'openai';

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

/**
 * A stream the simulator cuts after 10 tokens, asked with ask (the client's
 * streamed chat.completions.create for the content), is raised by the SDK
 * as an APIError upstream_error after the text so far, from one upstream
 * call.
 */
export async function assertMidStreamCut(stack, ask) {
  const { result, upstream } = await countedCalls(stack, async () => {
    const stream = await ask('[[sim:reset tokens=10]] Count to 50.');
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
