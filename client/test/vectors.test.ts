import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { DEFAULTS, decide, parseHttpDate, serverWaitMs, type Reason, type RetryPolicy } from '../src/index.js';

interface Vector {
  name: string;
  policy?: RetryPolicy;
  attempt: number;
  elapsedMs: number;
  status: number;
  headers: Record<string, string> | null;
  remainingMs: number | null;
  nowMs?: number;
  retry: boolean;
  reason: Reason;
  timeout: boolean;
  waitMs?: number;
  waitMinMs?: number;
  waitMaxMs?: number;
}

// The same file the Go tests in internal/retry read.
const file = new URL('../../../internal/retry/testdata/vectors.json', import.meta.url);
const shared = JSON.parse(readFileSync(file, 'utf8'));
const vectors: Vector[] = shared.vectors;

test('the defaults, the retryable statuses among them, are the shared ones (Go checks the same figures)', () => {
  assert.deepEqual({ ...DEFAULTS, statuses: [...DEFAULTS.statuses] }, shared.defaults);
});

test('the shared vectors cover every reason', () => {
  const reasons = new Set(vectors.map((v) => v.reason));
  for (const r of ['retry', 'not_retryable', 'should_not_retry', 'slow_failure', 'last_attempt', 'wait_too_long']) {
    assert.ok(reasons.has(r as Reason), `no vector for ${r}`);
  }
});

for (const v of vectors) {
  test(`vector: ${v.name}`, () => {
    for (const r of [0, 0.5, 1 - Number.EPSILON / 2]) {
      const d = decide({ ...v.policy, random: () => r }, {
        attempt: v.attempt,
        elapsedMs: v.elapsedMs,
        status: v.status,
        headers: v.headers === null ? null : new Headers(v.headers),
        remainingMs: v.remainingMs ?? Infinity,
        nowMs: v.nowMs,
      });
      assert.equal(d.retry, v.retry, `retry (rand ${r})`);
      assert.equal(d.reason, v.reason, `reason (rand ${r})`);
      assert.equal(d.timeout, v.timeout, `timeout (rand ${r})`);
      if (v.waitMs !== undefined) {
        assert.ok(Math.abs(d.waitMs - v.waitMs) < 0.001, `wait ${d.waitMs} != ${v.waitMs}`);
      } else if (v.waitMinMs !== undefined) {
        assert.ok(d.waitMs >= v.waitMinMs && d.waitMs < v.waitMaxMs!, `wait ${d.waitMs} outside [${v.waitMinMs}, ${v.waitMaxMs}) (rand ${r})`);
        if (r === 0) assert.equal(d.waitMs, v.waitMinMs);
      }
    }
  });
}

test('HTTP dates: the three formats, and days a month lacks', () => {
  const t = Date.UTC(2026, 10, 6, 8, 49, 37);
  assert.equal(parseHttpDate('Fri, 06 Nov 2026 08:49:37 GMT'), t);
  assert.equal(parseHttpDate('Friday, 06-Nov-26 08:49:37 GMT'), t);
  assert.equal(parseHttpDate('Fri Nov  6 08:49:37 2026'), t);
  assert.equal(parseHttpDate('Fri Nov 6 08:49:37 2026'), t);
  assert.equal(parseHttpDate('Mon, 31 Nov 2026 08:49:37 GMT'), undefined);
  assert.equal(parseHttpDate('2026-11-06T08:49:37Z'), undefined);
  assert.equal(parseHttpDate('Fri, 06 Nov 2026 24:00:00 GMT'), undefined);
});

test('serverWaitMs: no headers, garbage, exponent', () => {
  assert.equal(serverWaitMs(null), undefined);
  assert.equal(serverWaitMs(new Headers()), undefined);
  assert.equal(serverWaitMs(new Headers({ 'retry-after': '1_000' })), undefined);
  assert.equal(serverWaitMs(new Headers({ 'retry-after': '1-2' })), undefined);
  assert.equal(serverWaitMs(new Headers({ 'retry-after': '1e1' })), 10_000);
  assert.equal(serverWaitMs(new Headers({ 'retry-after': '1e400' })), undefined);
});
