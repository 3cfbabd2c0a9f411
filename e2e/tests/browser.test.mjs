// The demo page in a real browser (Debian's Chromium, headless, driven by
// playwright-core) against the real handler and simulator: what the retry
// rule and the handler's CORS look like from a web part.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { artifacts, BUDGET, startBrowser, startStack } from '../harness.mjs';

let stack;
let browser;
let context;

before(async () => {
  stack = await startStack();
  browser = await startBrowser(chromium);
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/**
 * Opens the demo at origin, asks with a scenario and waits for the outcome.
 * Counts the requests the page sent to POST /api/chat (preflights
 * excluded) and the handler's log lines for them.
 */
async function ask(origin, scenario, { timeout = 20_000, stream = true } = {}) {
  const page = await context.newPage();
  const chat = `${stack.api}/api/chat`;
  const requests = [];
  page.on('request', (r) => {
    if (r.url() === chat && r.method() === 'POST') requests.push(r);
  });
  await page.goto(stream ? `${origin}/` : `${origin}/?stream=0`);
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
  // The handler writes a request's line once it has answered: wait for the
  // line of every POST it answered, or, when none reached it (the browser's
  // preflight was refused), for the preflight's.
  const isPost = (l) => l.route?.includes('/api/chat') && l.method === 'POST';
  const answered = (await Promise.all(requests.map((q) => q.response().catch(() => null)))).filter((x) => x !== null).length;
  await stack.waitForRequestLogs(isPost, answered, { from: logFrom });
  if (answered === 0 && rows.length > 0) await stack.waitForRequestLogs((l) => l.method === 'OPTIONS', 1, { from: logFrom });
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
  // A stream's Server-Timing went out with its first byte: the cell says what it covers.
  const serverTime = '#timeline tbody tr:first-child td:last-child';
  await r.page.waitForFunction((sel) => document.querySelector(sel).textContent !== '', serverTime, { timeout: 5_000 });
  assert.match(await r.page.textContent(serverTime), /^until the stream began: (upstream \d+ ms, )?total \d+ ms$/);
  await r.page.close();
});

test("a scenario's own question leaves the box with it", async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/`);
  const usual = await page.inputValue('#question');
  await page.selectOption('#scenario', 'long');
  assert.match(await page.inputValue('#question'), /^Count to 5000/);
  await page.selectOption('#scenario', 'normal');
  assert.equal(await page.inputValue('#question'), usual, 'the usual question is back');
  // A question the user typed is theirs: it comes back after the long one.
  await page.fill('#question', 'What is timebox?');
  await page.selectOption('#scenario', 'long');
  await page.selectOption('#scenario', 'slow');
  assert.equal(await page.inputValue('#question'), 'What is timebox?');
  await page.close();
});

test('the page and an answer cost no failed request (a new user opening devtools sees no red line)', async () => {
  const page = await context.newPage();
  const failed = [];
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  // (Not requestfailed: the client cancels a stream's body once its last
  // event is in, by design, which Chromium reports as net::ERR_ABORTED.)
  // The favicon's request is not among the page's network events; its 404 is
  // a console error, the red line devtools shows.
  page.on('console', (m) => {
    if (m.type() === 'error') failed.push(`console ${m.text()} ${m.location().url}`);
  });
  await page.goto(`${stack.demo}/`);
  await page.click('#ask');
  await page.waitForSelector('#state[data-state="answered"]');
  // Chromium asks for /favicon.ico once the page has loaded, well before an
  // answer that takes the simulator's 500 ms to its first token.
  assert.deepEqual(failed, []);
  await page.close();
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
  // Not streamed: a stream's Server-Timing goes out with its first byte, before the upstream call is over.
  const r = await ask(stack.demo, 'transient', { stream: false });
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
  const logFrom = stack.handler.lines.length;
  await page.click('#ask');
  await page.waitForFunction(() => document.querySelector('#cancel') && !document.querySelector('#cancel').disabled);
  // Cancel once the attempt is in flight: the browser has sent it.
  if (requests.length === 0) await page.waitForRequest((r) => r.url() === chat && r.method() === 'POST');
  await page.click('#cancel');
  await page.waitForSelector('#state[data-state="failed"]');
  assert.equal(await page.textContent('#error'), 'Cancelled by the user.');
  assert.equal(requests.length, 1);
  // The cancelled attempt got no answer: its status cell is empty, not "network error".
  const rows = await page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((row) => [row[0], row[1], row[3]]), [['1', '', 'cancelled by the user']]);
  // The cancel closed the connection, which ended the request at the handler: client_gone, not the
  // deadline_exceeded the 6 s budget would have brought (an event, where a clock on a loaded machine lies).
  const line = await stack.waitForRequestLog((l) => l.route?.includes('/api/chat') && l.method === 'POST', { from: logFrom });
  assert.equal(line.code, 'client_gone', JSON.stringify(line));
  await page.close();
});

// Streaming. The simulator writes "count to N" as "1, 2, ..., N."
// one token per -per-token (10 ms) after its time to first token, and the
// handler logs a request's line only when the request is over: a delta that
// reaches the page before that line exists was streamed, not buffered.

test('streaming: a cross-origin page sees deltas before done, through the TypeScript client', async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/`);
  const logFrom = stack.handler.lines.length;
  let requestOverAtFirstDelta;
  await page.exposeFunction('firstDelta', () => {
    requestOverAtFirstDelta = stack.requestLog(logFrom).some((l) => l.route?.includes('/api/chat'));
  });
  const got = await page.evaluate(async (api) => {
    const { TimeboxClient } = await import('/client/index.js');
    const deltas = [];
    let pending;
    const r = await new TimeboxClient({ baseUrl: api }).chatStream(
      { messages: [{ role: 'user', content: 'Count to 100, with a comma between each number, no newlines and a period at the end.' }] },
      { onDelta: (text) => {
        if (deltas.push(text) === 1) pending = window.firstDelta();
      } },
    );
    await pending;
    return { deltas, answer: r.answer, finishReason: r.finishReason, requestId: r.requestId, completionTokens: r.usage.completionTokens };
  }, stack.api);
  assert.equal(requestOverAtFirstDelta, false, 'the first delta reached the page while the handler was still answering');
  assert.ok(got.deltas.length > 10, `${got.deltas.length} deltas`);
  assert.equal(got.deltas.join(''), got.answer, 'the deltas add up to the answer done carries');
  assert.match(got.answer, /^1, 2, 3, .* 99, 100\.$/);
  assert.equal(got.finishReason, 'stop');
  const line = await stack.waitForRequestLog((l) => l.requestId === got.requestId);
  assert.equal(line.status, 200);
  assert.equal(line.completionTokens, got.completionTokens);
  await page.close();
});

test('streaming past the budget: the demo keeps the partial text and shows the readable message under it', async () => {
  const from = stack.handler.lines.length;
  const r = await ask(stack.demo, 'long');
  assert.equal(r.state, 'failed');
  assert.equal(r.requests.length, 1, 'nothing is retried after the first piece');
  assert.match(r.answer, /^1, 2, 3, 4, 5, /, 'the text written before the deadline');
  assert.ok(await r.page.$eval('#answer', (el) => el.classList.contains('partial')), 'marked partial');
  assert.equal(await r.field('code'), 'deadline_exceeded');
  assert.equal(await r.field('timeout'), 'true');
  assert.equal(await r.field('reason'), 'stream_failed');
  assert.equal(Number(await r.field('partialChars')), r.answer.length);
  assert.ok(r.error && !/HTTP/.test(r.error), `the server's readable message, got ${r.error}`);
  // The message sits under the text.
  assert.ok(await r.page.$eval('#answer', (a) => a.compareDocumentPosition(document.getElementById('error')) & Node.DOCUMENT_POSITION_FOLLOWING));
  assert.deepEqual(r.rows.map((row) => [row[0], row[1], row[3]]), [['1', '200', 'stop: stream_failed']]);
  const line = await stack.waitForRequestLog((l) => l.route?.includes('/api/chat') && l.method === 'POST', { from });
  assert.equal(line.code, 'deadline_exceeded');
  assert.ok(line.completionTokens > 0, `the handler counts the tokens it delivered: ${JSON.stringify(line)}`);
  await r.page.close();
});

test('streaming, the same partial text without the demo: TimeboxError.partial after the deadline', async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/`);
  const got = await page.evaluate(async (api) => {
    const { TimeboxClient, TimeboxError } = await import('/client/index.js');
    let shown = '';
    try {
      await new TimeboxClient({ baseUrl: api }).chatStream(
        { messages: [{ role: 'user', content: 'Count to 5000, with a comma between each number, no newlines and a period at the end.' }] },
        { onDelta: (_, soFar) => (shown = soFar) },
      );
      return { ok: true };
    } catch (err) {
      return { isTimeboxError: err instanceof TimeboxError, code: err.code, status: err.status, partial: err.partial, shown, message: err.message };
    }
  }, stack.api);
  assert.equal(got.isTimeboxError, true, JSON.stringify(got));
  assert.equal(got.code, 'deadline_exceeded');
  assert.equal(got.status, 200);
  assert.equal(got.partial.answer, got.shown, 'the error keeps exactly what was shown');
  assert.match(got.partial.answer, /^1, 2, 3, /);
  await page.close();
});

test('cancel while streaming: the attempt gets its own row and the handler ends the request', async () => {
  const page = await context.newPage();
  await page.goto(`${stack.demo}/?scenario=long`);
  const logFrom = stack.handler.lines.length;
  await page.click('#ask');
  await page.waitForSelector('#state[data-state="streaming"]');
  // The attempt's elapsed time counts while it runs.
  const elapsed = '#timeline tbody tr:first-child td:nth-child(3)';
  const before = await page.textContent(elapsed);
  await page.waitForFunction(([sel, was]) => document.querySelector(sel).textContent !== was, [elapsed, before]);
  await page.click('#cancel');
  await page.waitForSelector('#state[data-state="failed"]');
  assert.equal(await page.textContent('#error'), 'Cancelled by the user.');
  const rows = await page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((row) => [row[0], row[1], row[3]]), [['1', '200', 'cancelled by the user']]);
  assert.match(await page.textContent('#answer'), /^1, 2, /, 'what was shown stays');
  // The closed connection reaches the handler, which ends the request (and its upstream call) long before its budget.
  const line = await stack.waitForRequestLog((l) => l.route?.includes('/api/chat') && l.method === 'POST', { from: logFrom });
  assert.equal(line.code, 'client_gone', JSON.stringify(line));
  await page.close();
});

test('the same long answer not streamed: the 500 deadline_exceeded carries the partial text, and the demo shows it', async () => {
  const r = await ask(stack.demo, 'long', { stream: false });
  assert.equal(r.state, 'failed');
  assert.equal(r.requests.length, 1);
  assert.equal(await r.field('status'), '500');
  assert.equal(await r.field('code'), 'deadline_exceeded');
  assert.equal(await r.field('reason'), 'not_retryable');
  assert.match(r.answer, /^1, 2, 3, 4, 5, /, 'the text the server had when the budget ran out');
  assert.ok(await r.page.$eval('#answer', (el) => el.classList.contains('partial')), 'marked partial');
  assert.ok(Number(await r.field('completionTokens')) > 0, 'the server counted the partial tokens');
  assert.deepEqual(r.rows.map((row) => [row[0], row[1], row[3]]), [['1', '500', 'stop: not_retryable']]);
  await r.page.close();
});

test('counters run through the attempt and the wait; a cancel during the wait gets its own row', async () => {
  const page = await context.newPage();
  const chat = `${stack.api}/api/chat`;
  const requests = [];
  page.on('request', (r) => {
    if (r.url() === chat && r.method() === 'POST') requests.push(r);
  });
  // Throttled for longer than the 6 s budget: the page gets the 429 and waits Retry-After (8 s).
  await page.goto(`${stack.demo}/?scenario=throttled`);
  await page.click('#ask');
  const waitCell = '#timeline tbody tr:first-child td:nth-child(5)';
  await page.waitForFunction((sel) => /^\d+ ms of \d/.test(document.querySelector(sel)?.textContent ?? ''), waitCell);
  const first = await page.textContent(waitCell);
  await page.waitForFunction(([sel, before]) => /of/.test(document.querySelector(sel).textContent) && document.querySelector(sel).textContent !== before, [waitCell, first]);
  await page.click('#cancel');
  await page.waitForSelector('#state[data-state="failed"]');
  const rows = await page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((row) => [row[0], row[1], row[3]]), [['1', '429', 'retry'], ['2', '', 'cancelled by the user (before it was sent)']]);
  assert.doesNotMatch(rows[0][4], /of/, 'the wait cell shows how long the page waited');
  assert.equal(requests.length, 1, 'the second attempt was never sent');
  await page.close();
});
