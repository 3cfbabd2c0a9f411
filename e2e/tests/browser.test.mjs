// The demo page in a real browser (Debian's Chromium, headless, driven by
// playwright-core) against the real handler and simulator: what the retry
// rule and the handler's CORS look like from a web part.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { artifacts, BUDGET, startStack } from '../harness.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'];

let stack;
let context;
let profile;

before(async () => {
  stack = await startStack();
  profile = await mkdtemp(join(tmpdir(), 'timebox-chromium-'));
  // A fresh profile every run (launchPersistentContext is how playwright
  // takes --user-data-dir).
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
});

after(async () => {
  await context?.close();
  await stack?.stop();
  if (profile) await rm(profile, { recursive: true, force: true });
});

/**
 * Opens the demo at origin, asks with a scenario and waits for the outcome.
 * Counts the requests the page sent to POST /api/chat (preflights
 * excluded) and the handler's log lines for them.
 */
async function ask(origin, scenario, { timeout = 20_000 } = {}) {
  const page = await context.newPage();
  const chat = `${stack.api}/api/chat`;
  const requests = [];
  page.on('request', (r) => {
    if (r.url() === chat && r.method() === 'POST') requests.push(r);
  });
  await page.goto(`${origin}/`);
  await page.selectOption('#scenario', scenario);
  const logFrom = stack.handler.lines.length;
  await page.click('#ask');
  await page.waitForSelector('#state[data-state="answered"], #state[data-state="failed"]', { timeout });
  const state = await page.getAttribute('#state', 'data-state');
  const rows = await page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  // Generous: a loaded machine can take seconds per browser round trip.
  const field = async (name) => page.textContent(`#details dd[data-field="${name}"]`, { timeout: 10_000 }).catch(() => null);
  const answer = (await page.isVisible('#answer')) ? await page.textContent('#answer') : null;
  const error = (await page.isVisible('#error')) ? await page.textContent('#error') : null;
  // Give the handler a moment to write its line for the last request.
  await new Promise((r) => setTimeout(r, 100));
  const all = stack.requestLog(logFrom);
  const log = all.filter((l) => l.route?.includes('/api/chat') && l.method === 'POST');
  const preflights = all.filter((l) => l.method === 'OPTIONS');
  return { page, state, rows, answer, error, field, requests, log, preflights };
}

test('normal: one request and the answer', async () => {
  const r = await ask(stack.demo, 'normal');
  assert.equal(r.state, 'answered');
  assert.match(r.answer, /^1, 2, 3, 4, 5, 6, 7, 8, 9, 10\.$/);
  assert.equal(r.requests.length, 1);
  assert.deepEqual(r.rows.map((row) => [row[1], row[3]]), [['200', 'success']]);
  await r.page.close();
});

test('hang past the budget: exactly one request, and the 500 is read and shown', async () => {
  const r = await ask(stack.demo, 'hang');
  assert.equal(r.state, 'failed');
  assert.equal(r.requests.length, 1, 'a 500 is never retried');
  assert.equal(await r.field('status'), '500');
  assert.equal(await r.field('code'), 'deadline_exceeded');
  assert.equal(await r.field('timeout'), 'true');
  assert.ok(r.error && r.error.length > 10 && !/HTTP 500/.test(r.error), `the server's own readable message, got ${r.error}`);
  assert.match(await r.field('requestId'), /\S/);
  assert.deepEqual(r.rows.map((row) => [row[0], row[1], row[3]]), [['1', '500', 'stop: not_retryable']]);
  assert.deepEqual(r.log.map((l) => l.status), [500], 'the handler saw one request');
  await r.page.close();
});

test('two fast 503s then success: three requests and the answer', async () => {
  const r = await ask(stack.demo, 'transient');
  assert.equal(r.state, 'answered');
  assert.match(r.answer, /1, 2, 3/);
  assert.equal(r.requests.length, 3);
  assert.deepEqual(r.rows.map((row) => [row[0], row[1], row[3]]), [
    ['1', '503', 'retry'],
    ['2', '503', 'retry'],
    ['3', '200', 'success'],
  ]);
  assert.deepEqual(r.log.map((l) => l.status), [503, 503, 200], 'the handler saw the same three');
  // Each attempt's row shows where the handler says its time went (Server-Timing, read cross-origin).
  await r.page.waitForFunction(() => [...document.querySelectorAll('#timeline tbody tr')].every((tr) => tr.lastElementChild.textContent !== ''), null, { timeout: 5_000 });
  const serverTimes = await r.page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => tr.lastElementChild.textContent));
  for (const t of serverTimes) assert.match(t, /^upstream \d+ ms, total \d+ ms$/);
  await mkdir(artifacts, { recursive: true });
  await r.page.locator('main').screenshot({ path: join(artifacts, 'timeline.png') });
  await r.page.close();
});

test('throttled: the page reads Retry-After from a cross-origin 429 and waits it', async () => {
  const r = await ask(stack.demo, 'throttled');
  const why = JSON.stringify({ rows: r.rows, error: r.error, log: r.log });
  assert.equal(r.state, 'answered', why);
  assert.equal(r.requests.length, 2, why);
  assert.equal(r.rows[0][1], '429');
  assert.equal(r.rows[0][3], 'retry');
  // Without a readable Retry-After the client would back off 250-500 ms;
  // the budget + 2 s wait (demo/scenarios.js) can only come from the
  // exposed header.
  const throttleS = Number.parseInt(BUDGET, 10) + 2;
  const waitS = Number(r.rows[0][4].replace(/ s$/, ''));
  assert.ok(waitS >= throttleS - 1 && waitS <= throttleS, `wait ${r.rows[0][4]}, asked ${throttleS} s`);
  const gap = r.requests[1].timing().startTime - r.requests[0].timing().startTime;
  assert.ok(gap >= (throttleS - 1) * 1000, `second request ${gap} ms after the first`);
  assert.deepEqual(r.log.map((l) => l.status), [429, 200]);
  // And directly: the browser lets the page read the headers of a 429.
  const seen = await r.page.evaluate(async (api) => {
    const res = await fetch(`${api}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: '[[sim:throttle s=45]] hi' }] }),
    });
    await res.text();
    const entry = performance.getEntriesByType('resource').filter((e) => e.name === `${api}/api/chat`).pop();
    return {
      status: res.status, retryAfter: res.headers.get('retry-after'), retryAfterMs: res.headers.get('retry-after-ms'),
      shouldRetry: res.headers.get('x-should-retry'), requestId: res.headers.get('x-request-id'),
      serverTiming: res.headers.get('server-timing'), timingNames: (entry?.serverTiming ?? []).map((t) => t.name),
    };
  }, stack.api);
  assert.equal(seen.status, 429);
  assert.match(seen.retryAfter, /^4[0-5]$/);
  assert.match(seen.retryAfterMs, /^\d+(\.\d+)?$/);
  assert.match(seen.requestId, /\S/);
  // Where the time went is readable cross-origin too (Server-Timing, Timing-Allow-Origin).
  assert.match(seen.serverTiming, /upstream;dur=[\d.]+, total;dur=[\d.]+$/);
  assert.deepEqual(seen.timingNames, ['prompt', 'upstream', 'total']);
  await r.page.close();
});

test('throttled for longer than the client waits: one request, "try again in N s"', async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/`);
  const got = await page.evaluate(async (api) => {
    const { TimeboxClient } = await import('/client/index.js');
    const attempts = [];
    try {
      await new TimeboxClient({ baseUrl: api }).chat({ messages: [{ role: 'user', content: '[[sim:throttle s=45]] hi' }] }, { onAttempt: (e) => attempts.push(e.decision) });
      return { ok: true };
    } catch (err) {
      return { message: err.message, retryAfterMs: err.retryAfterMs, code: err.code, attempts };
    }
  }, stack.api);
  assert.equal(got.code, 'rate_limited');
  assert.deepEqual(got.attempts, ['wait_too_long']);
  assert.ok(got.retryAfterMs > 40_000 && got.retryAfterMs <= 45_000, `retryAfterMs ${got.retryAfterMs}`);
  assert.match(got.message, /Try again in 4\d s\.$/);
  await page.close();
});

test('slow failure: a 503 that came after the threshold is answered 500 and not retried', async () => {
  const r = await ask(stack.demo, 'slow-failure');
  assert.equal(r.state, 'failed');
  assert.equal(r.requests.length, 1);
  assert.equal(await r.field('status'), '500');
  assert.equal(r.rows[0][3], 'stop: not_retryable');
  await r.page.close();
});

test('a page on a disallowed origin cannot read the answer', async () => {
  const r = await ask(stack.otherDemo, 'normal');
  assert.equal(r.state, 'failed');
  assert.equal(r.answer, null);
  assert.equal(await r.field('status'), '0', 'the browser hides the response: a network error to the page');
  assert.equal(await r.field('code'), 'network_error');
  assert.ok(r.rows.every((row) => row[1] === 'network error'));
  assert.deepEqual(r.log, [], 'no POST got past the preflight');
  assert.ok(r.preflights.length >= 1, 'the browser asked first');
  assert.ok(r.preflights.every((l) => l.status === 403 && l.code === 'origin_not_allowed'), JSON.stringify(r.preflights));
  await r.page.close();
});

test("cancel: the caller's signal ends the attempt in flight at once", async () => {
  const page = await context.newPage();
  const chat = `${stack.api}/api/chat`;
  const requests = [];
  page.on('request', (r) => {
    if (r.url() === chat && r.method() === 'POST') requests.push(r);
  });
  await page.goto(`${stack.demo}/?scenario=hang`);
  await page.click('#ask');
  await page.waitForFunction(() => document.querySelector('#cancel') && !document.querySelector('#cancel').disabled);
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  await page.click('#cancel');
  await page.waitForSelector('#state[data-state="failed"]', { timeout: 4_000 });
  assert.ok(Date.now() - t0 < 2_000, 'no waiting for the budget (6 s)');
  assert.equal(await page.textContent('#error'), 'Cancelled by the user.');
  assert.equal(requests.length, 1);
  await page.close();
});
