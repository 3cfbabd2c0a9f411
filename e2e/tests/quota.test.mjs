// The quota from a web part: the demo page in Chromium against the real
// handler, with Azurite's Table service holding a small daily limit. The page
// shows "N of 600 tokens used today" after each answer, and the limit's
// answer, when it comes, at once and in its own words.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

import { startBrowser, startStack } from '../harness.mjs';

const LIMIT = 600;

let stack;
let browser;
let context;

before(async () => {
  stack = await startStack({ quota: { userDaily: LIMIT } });
  browser = await startBrowser(chromium);
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/** The number of tokens the usage line says were used. */
function used(line) {
  const m = /^([\d,]+) of 600 tokens used today$/.exec(line ?? '');
  assert.ok(m, `usage line: ${line}`);
  return Number(m[1].replaceAll(',', ''));
}

test('the usage line counts each answer, and the limit is answered at once in its own words', async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/`);
  await page.waitForSelector('#usage:not([hidden])');
  assert.equal(used(await page.textContent('#usage')), 0);

  let before = 0;
  let refused;
  for (let i = 1; i <= 8 && !refused; i++) {
    const loaded = await page.getAttribute('#usage', 'data-loaded');
    await page.click('#ask');
    await page.waitForSelector('#state[data-state="answered"], #state[data-state="failed"]');
    // The line is read again after every answer, refused or not.
    await page.waitForFunction((was) => document.getElementById('usage').dataset.loaded !== was, loaded);
    // An answer is settled before it is written: the line read after it counts it.
    const now = used(await page.textContent('#usage'));
    if ((await page.getAttribute('#state', 'data-state')) === 'failed') {
      refused = { error: await page.textContent('#error'), rows: await page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent))), now };
      break;
    }
    assert.ok(now > before, `answer ${i} is counted: ${before} -> ${now}`);
    assert.ok(now <= LIMIT);
    before = now;
  }
  assert.ok(refused, 'the limit is reached within a few questions');
  assert.match(refused.error, /^Your daily limit of 600 tokens is used up\. It resets at 00:00 UTC, in (\d+ h( \d+ min)?|\d+ min)\.$/);
  assert.deepEqual(refused.rows.map((r) => [r[1], r[3], r[5]]), [['429', 'stop: should_not_retry', 'quota_exceeded']], 'one attempt: never retried');
  assert.equal(refused.now, before, 'a refused question costs nothing');
  const log = stack.requestLog().filter((l) => l.status === 429);
  assert.equal(log.length, 1);
  assert.equal(log[0].upstreamAttempts ?? 0, 0, 'no upstream call');
  await page.close();
});

test('with the store down and QUOTA_FAIL_OPEN=true the answer is served and the line says usage is unavailable, at once', async () => {
  const down = await startStack({ quota: { userDaily: LIMIT, storeDown: true, failOpen: true } });
  try {
    const page = await context.newPage();
    await page.goto(`${down.demo}/`);
    await page.waitForSelector('#usage:not([hidden])');
    assert.equal(await page.textContent('#usage'), 'Token usage is unavailable right now.');
    const loaded = await page.getAttribute('#usage', 'data-loaded');
    await page.click('#ask');
    await page.waitForSelector('#state[data-state="answered"], #state[data-state="failed"]');
    assert.equal(await page.getAttribute('#state', 'data-state'), 'answered', await page.textContent('#error'));
    const answeredAt = Date.now();
    await page.waitForFunction((was) => document.getElementById('usage').dataset.loaded !== was, loaded);
    // An upper bound on a real socket: the 503's 5 s Retry-After is not waited for.
    assert.ok(Date.now() - answeredAt < 4_000, `the line is read again at once (${Date.now() - answeredAt} ms)`);
    assert.equal(await page.textContent('#usage'), 'Token usage is unavailable right now.');
    // The page has read both answers; their log lines may follow.
    await down.waitForRequestLogs((l) => l.route === '/api/usage', 2);
    const log = down.requestLog();
    assert.ok(log.some((l) => l.route === '/api/chat' && l.status === 200 && l.quota === 'skipped'), 'served unaccounted, and logged so');
    const usage = log.filter((l) => l.route === '/api/usage');
    assert.ok(usage.length >= 2 && usage.every((l) => l.status === 503 && l.quota === 'unavailable' && l.code === 'quota_unavailable'));
    await page.close();
  } finally {
    await down.stop();
  }
});
