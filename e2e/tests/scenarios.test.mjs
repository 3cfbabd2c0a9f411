// The scenario picker's promises, for the budgets it is served with: what a
// scenario says to expect must be what make run's stack can do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scenarios } from '../../demo/scenarios.js';

const long = (budgetMs) => scenarios({ thresholdMs: 3_000, budgetMs }).find((s) => s.id === 'long');

test('a short budget cuts the long answer: the scenario promises the partial text', () => {
  assert.match(long(6_000).expect, /streams in until the budget \(6 s\) runs out/);
});

test("make run's 200 s budget outlasts the longest answer: no deadline promised, and how to see one", () => {
  const { expect } = long(200_000);
  assert.doesNotMatch(expect, /until the budget/);
  assert.match(expect, /finishReason "length"/);
  assert.match(expect, /REQUEST_BUDGET=10s FAST_FAILURE_THRESHOLD=3s make run/);
});
