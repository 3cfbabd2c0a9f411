// The scenario picker: each scenario is a simulator directive put in front
// of the question (internal/aoaitest: "[[sim:...]]", the last one wins).
// thresholdMs and budgetMs are the handler's FAST_FAILURE_THRESHOLD and
// REQUEST_BUDGET, as demo/serve.mjs was told.

/** A unique counter id, so "twice then OK" starts over on every click. */
export function uniqueId() {
  return `demo-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

export function scenarios({ thresholdMs, budgetMs }) {
  // Fails just past the threshold but well inside the budget.
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
      label: 'Throttled (Retry-After 250 s)',
      directive: () => '[[sim:throttle s=250]]',
      expect: 'a 429 whose Retry-After the page reads: too long to wait, "try again in 250 s"',
    },
    {
      id: 'slow-failure',
      label: `Slow failure (503 after ${slowFailureAfter} ms)`,
      directive: () => `[[sim:status code=503 after=${slowFailureAfter}]]`,
      expect: 'the upstream failed after the threshold: a 500, not retried',
    },
    {
      id: 'hang',
      label: 'Hang past the budget',
      directive: () => '[[sim:hang]]',
      expect: `the server gives up at its budget (${Math.round(budgetMs / 1000)} s) with a 500: exactly one request`,
    },
  ];
}
