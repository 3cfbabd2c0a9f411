// The scenario picker's promises, for the budgets it is served with: what a
// scenario says to expect must be what make run's stack can do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scenarios } from '../../demo/scenarios.js';

const long = (budgetMs) => scenarios({ thresholdMs: 3_000, budgetMs }).find((s) => s.id === 'long');

test('a short budget cuts the long answer: the scenario promises the partial text', () => {
  assert.match(long(6_000).expect, /at the budget \(6 s\) the server ends it: the text so far stays/);
});

test("make run's 200 s budget cuts it too: the model stalls mid-answer, so the budget, not MAX_TOKENS, ends it", () => {
  const s = long(200_000);
  assert.match(s.directive(), /^\[\[sim:hang tokens=\d+\]\]$/);
  assert.match(s.expect, /at the budget \(200 s\) the server ends it/);
});
