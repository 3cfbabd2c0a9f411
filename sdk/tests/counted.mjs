// countedCalls: what an SDK call did, counted from the logs of the stack
// (e2e/harness.mjs) it ran against.

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
