// The scenario picker: each scenario is a simulator directive put in front
// of the question (internal/aoaitest: "[[sim:...]]", the last one wins), or
// a question of its own, put in the question box when it is picked.
// thresholdMs and budgetMs are the handler's FAST_FAILURE_THRESHOLD and
// REQUEST_BUDGET, as demo/serve.mjs was told.

/** A unique counter id, so "twice then OK" starts over on every click. */
export function uniqueId() {
  return `demo-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The long answer's question, which the scenario puts in the question box. */
export const LONG_QUESTION = 'Count to 5000, with a comma between each number, no newlines and a period at the end.';

export function scenarios({ thresholdMs, budgetMs }) {
  // Fails just past the threshold but well inside the budget.
  // Longer than the budget when the budget is short (a scaled-down run), so
  // the 429 reaches the page; always under the client's 30 s cap and the
  // server's 60 s "never clears" line.
  const throttleS = budgetMs <= 20_000 ? Math.ceil(budgetMs / 1000) + 2 : 5;
  const slowFailureAfter = Math.round(Math.min(thresholdMs + 1000, (thresholdMs + budgetMs) / 2));
  return [
    { id: 'normal', label: 'Normal', directive: () => '', expect: 'one request, the answer' },
    { id: 'slow', label: 'Slow upstream (2 s)', directive: () => '[[sim:slow ms=2000]]', expect: 'one slow request, the answer' },
    {
      id: 'transient',
      label: 'Transient 503, twice, then OK',
      directive: () => `[[sim:status code=503 times=2 id=${uniqueId()}]]`,
      expect: 'two fast 503s retried with backoff, then the answer',
    },
    {
      id: 'throttled',
      label: `Throttled once (Retry-After ${throttleS} s)`,
      directive: () => `[[sim:throttle s=${throttleS} times=1 id=${uniqueId()}]]`,
      expect: throttleS * 1000 > budgetMs
        ? `the wait does not fit the server's budget, so the page gets the 429, reads Retry-After (CORS exposes it), waits ${throttleS} s and retries once`
        : `the wait fits the server's budget, so the server waits ${throttleS} s and retries itself: one request, upstreamAttempts 2`,
    },
    {
      id: 'slow-failure',
      label: `Slow failure (503 after ${slowFailureAfter} ms)`,
      directive: () => `[[sim:status code=503 after=${slowFailureAfter}]]`,
      expect: 'the upstream failed after the threshold: a 500, not retried',
    },
    {
      id: 'long',
      label: 'Long answer past the budget',
      // The model stalls after 200 tokens, as a stuck one does: the budget
      // ends the answer at any REQUEST_BUDGET. An answer that only runs long
      // reaches the completion limit (MAX_TOKENS) long before a 200 s budget.
      directive: () => '[[sim:hang tokens=200]]',
      question: LONG_QUESTION,
      expect: `the answer streams in, then stops after 200 tokens as a stuck model does; at the budget (${Math.round(budgetMs / 1000)} s) the server ends it: the text so far stays, marked partial, with the server's readable message under it; one request`,
    },
    {
      id: 'hops',
      label: 'Long answer across hops (background mode)',
      // With a deployment in background mode (o3, gpt-5, ...), a generation
      // three budgets long is delivered in hops: each request ends before
      // the budget with a cursor, and the client goes on with it.
      directive: () => `[[sim:long s=${Math.round((3 * budgetMs) / 1000)}]]`,
      question: 'Count to 100, with a comma between each number, no newlines and a period at the end.',
      expect: `with a deployment in background mode: the answer takes three budgets (${Math.round((3 * budgetMs) / 1000)} s) and grows across hops, "still writing, part 2", 3, ...; Cancel stops it at Azure OpenAI. With a chat deployment: one ordinary answer`,
    },
    {
      id: 'hang',
      label: 'Hang past the budget',
      directive: () => '[[sim:hang]]',
      expect: `the server gives up at its budget (${Math.round(budgetMs / 1000)} s) with a 500: exactly one request`,
    },
  ];
}
