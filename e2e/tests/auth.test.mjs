// AUTH_MODE=entra in a real browser: the demo page gets a token from the
// simulator's local issuer and the handler validates it (signature against
// the issuer's real keys); a page with no token gets a 401 it can read.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

import { ENTRA, startBrowser, startStack } from '../harness.mjs';

let stack;
let browser;
let context;

before(async () => {
  stack = await startStack({ entra: true });
  browser = await startBrowser(chromium);
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/** Asks the normal question from the page at origin; returns what the page and the handler saw. */
async function ask(origin) {
  const page = await context.newPage();
  const chat = `${stack.api}/api/chat`;
  const sent = [];
  page.on('request', (r) => {
    if (r.url() === chat && r.method() === 'POST') sent.push(r.headers());
  });
  await page.goto(`${origin}/?scenario=normal`);
  const logFrom = stack.handler.lines.length;
  await page.click('#ask');
  await page.waitForSelector('#state[data-state="answered"], #state[data-state="failed"]', { timeout: 20_000 });
  const state = await page.getAttribute('#state', 'data-state');
  const error = (await page.isVisible('#error')) ? await page.textContent('#error') : null;
  await page.close();
  const log = stack.requestLog(logFrom).filter((l) => l.route?.includes('/api/chat') && l.method === 'POST');
  return { state, error, sent, log };
}

test('a page with a token from the issuer is answered, and the log line names the caller', async () => {
  const r = await ask(stack.demo);
  assert.equal(r.state, 'answered');
  assert.equal(r.sent.length, 1);
  assert.match(r.sent[0].authorization ?? '', /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  assert.equal(r.log.length, 1);
  assert.equal(r.log[0].status, 200);
  assert.equal(r.log[0].callerOid, ENTRA.oid);
  assert.equal(r.log[0].callerTid, ENTRA.tenant);
});

test('a page without a token reads the 401 and does not retry it; nothing reaches Azure OpenAI', async () => {
  const r = await ask(stack.otherDemo);
  assert.equal(r.state, 'failed');
  assert.equal(r.sent.length, 1, 'a 401 is not retried');
  assert.equal(r.sent[0].authorization, undefined);
  assert.ok(r.error?.includes('Sign in'), `the server's readable message, got ${r.error}`);
  assert.equal(r.log.length, 1);
  assert.equal(r.log[0].status, 401);
  assert.equal(r.log[0].code, 'unauthenticated');
  assert.equal(r.log[0].upstreamAttempts, undefined, 'never upstream');
});
