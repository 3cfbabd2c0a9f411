// openai (npm) in Debian's headless Chromium, from a page on another origin
// than the API: the preflight with the SDK's own headers (x-stainless-*,
// authorization) passes, the answers are read, and the SDK in the browser
// reads x-should-retry and the retry headers that CORS exposes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { startBrowser, startStack } from '../../e2e/harness.mjs';
import { TOOLS, WEATHER } from './counted.mjs';

let stack;
let server;
let browser;
let page;
const posts = []; // the headers of each POST the page sent

before(async () => {
  stack = await startStack({ pages: 1 });
  const port = new URL(stack.pages[0]).port;
  server = spawn(process.execPath, [fileURLToPath(new URL('../serve.mjs', import.meta.url)), '--port', port], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => server.stdout.once('data', resolve));
  browser = await startBrowser(chromium);
  page = await browser.context.newPage();
  page.on('request', (r) => {
    if (r.method() === 'POST') posts.push(r.headers());
  });
  await page.goto(stack.pages[0]);
  await page.waitForSelector('#state[data-state="ready"]');
});

after(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
  await stack?.stop();
});

const run = (options) => page.evaluate(([api, o]) => window.run(api, o), [stack.api, options]);

test('an answer, across origins, after a preflight with the SDK\'s own headers', async () => {
  const logFrom = stack.handler.lines.length;
  const r = await run({ content: 'Count to 4.' });
  assert.deepEqual(r, { ok: true, text: '1, 2, 3, 4.' });
  const preflight = await stack.waitForRequestLog((l) => l.method === 'OPTIONS', { from: logFrom });
  assert.ok(preflight.status < 300, `the preflight passed: ${preflight.status}`);
  const post = await stack.waitForRequestLog((l) => l.method === 'POST', { from: logFrom });
  assert.equal(post.status, 200);
});

test('a stream, in pieces', async () => {
  const r = await run({ content: 'Count to 15.', stream: true });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.text, Array.from({ length: 15 }, (_, i) => i + 1).join(', ') + '.');
  assert.ok(r.chunks > 10);
});

test('the deadline: one request, and the page reads timebox\'s code and x-should-retry: false', async () => {
  const simFrom = stack.simulator.lines.length;
  const r = await run({ content: '[[sim:hang]] hi' });
  assert.equal(r.ok, false);
  assert.equal(r.status, 500);
  assert.equal(r.code, 'deadline_exceeded');
  assert.match(r.message, /did not answer in time/);
  assert.equal(r.shouldRetry, 'false', 'CORS exposes x-should-retry');
  assert.ok(r.requestId, 'CORS exposes x-request-id');
  await stack.waitForUpstreamLogs(1, { from: simFrom });
  assert.equal(stack.upstreamLog(simFrom).length, 1);
});

test('a 429 whose wait does not fit: surfaced at once, retry-after readable', async () => {
  const simFrom = stack.simulator.lines.length;
  const r = await run({ content: '[[sim:throttle s=20 times=1 id=browser-429]] hi' });
  assert.equal(r.status, 429);
  assert.equal(r.code, 'rate_limited');
  assert.equal(r.shouldRetry, 'false');
  assert.equal(r.retryAfter, '20', 'CORS exposes retry-after');
  await stack.waitForUpstreamLogs(1, { from: simFrom });
  assert.equal(stack.upstreamLog(simFrom).length, 1);
});

test('a fast 503 is retried by the SDK in the page, then answered', async () => {
  const simFrom = stack.simulator.lines.length;
  const r = await run({ content: '[[sim:status code=503 times=1 id=browser-503]] Count to 2.' });
  assert.deepEqual(r, { ok: true, text: '1, 2.' });
  await stack.waitForUpstreamLogs(2, { from: simFrom });
  assert.deepEqual(stack.upstreamLog(simFrom).map((u) => u.status), [503, 200]);
});

test('a tool call, read in the page', async () => {
  const r = await run({ content: WEATHER, tools: TOOLS });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.finish, 'tool_calls');
  assert.equal(r.calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(r.calls[0].function.arguments), { question: WEATHER });
});

test('a mid-stream cut is raised by the SDK in the page, after the text so far', async () => {
  const simFrom = stack.simulator.lines.length;
  const r = await run({ content: '[[sim:reset tokens=10]] Count to 50.', stream: true });
  assert.equal(r.ok, false, JSON.stringify(r));
  assert.equal(r.code, 'upstream_error');
  assert.match(r.text, /^1, 2, 3/, 'the text so far arrived first');
  await stack.waitForUpstreamLogs(1, { from: simFrom });
  assert.equal(stack.upstreamLog(simFrom).length, 1);
});

test('the SDK\'s own headers went out across origins: the preflight allowed them', () => {
  assert.ok(posts.length > 0);
  const names = Object.keys(posts[0]);
  assert.ok(names.includes('authorization'), names.join(','));
  assert.ok(names.some((n) => n.startsWith('x-stainless-')), names.join(','));
});
