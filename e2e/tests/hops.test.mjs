// A long answer across hops in a real browser: the built TypeScript client
// on the demo page, against the real handler (budget 6 s) on an o3
// deployment, whose answers run in the simulator's background mode.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

import { startBrowser, startStack } from '../harness.mjs';

let stack;
let browser;
let context;

before(async () => {
  stack = await startStack({ deployment: 'o3' });
  browser = await startBrowser(chromium);
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

async function open(stream) {
  const page = await context.newPage();
  await page.goto(stream ? `${stack.demo}/` : `${stack.demo}/?stream=0`);
  await page.selectOption('#scenario', 'hops');
  return page;
}

const whole = Array.from({ length: 100 }, (_, i) => i + 1).join(', ') + '.';

for (const stream of [true, false]) {
  test(`a generation of three budgets grows across hops and arrives whole (${stream ? 'streamed' : 'not streamed'})`, async () => {
    const page = await open(stream);
    const logFrom = stack.handler.lines.length;
    await page.click('#ask');
    await page.waitForSelector('#part[data-hop="3"]', { timeout: 30_000 });
    await page.waitForSelector('#state[data-state="answered"], #state[data-state="failed"]', { timeout: 40_000 });
    assert.equal(await page.getAttribute('#state', 'data-state'), 'answered', await page.textContent('#error').catch(() => ''));
    assert.equal(await page.textContent('#answer'), whole, 'the whole answer, once');
    assert.match(await page.textContent('#part'), /^still writing, part \d+$/);
    const hops = Number(await page.getAttribute('#part', 'data-hop'));
    await stack.waitForRequestLogs((l) => l.route === '/api/chat/continue' && l.method === 'POST', hops - 1, { from: logFrom });
    const lines = stack.requestLog(logFrom).filter((l) => l.method === 'POST');
    assert.deepEqual(lines.map((l) => l.hop), Array.from({ length: hops }, (_, i) => i + 1));
    assert.equal(new Set(lines.map((l) => l.responseId)).size, 1, 'one generation');
    await page.close();
  });
}

test('Cancel during a later hop stops the generation at Azure OpenAI', async () => {
  const page = await open(true);
  const simFrom = stack.simulator.lines.length;
  await page.click('#ask');
  await page.waitForSelector('#part[data-hop="2"]', { timeout: 30_000 });
  await page.click('#cancel');
  await page.waitForSelector('#state[data-state="failed"]', { timeout: 10_000 });
  const line = await stack.simulator.waitForLine((l) => l.includes('"msg":"aoai request"') && l.includes('"method":"POST"') && /\/cancel"/.test(l), { from: simFrom, timeoutMs: 15_000 });
  assert.match(JSON.parse(line).path, /^\/openai\/v1\/responses\/resp_[0-9a-f]+\/cancel$/);
  await page.close();
});

test('Leaving the page during a later hop cancels the generation with a request that outlives the page', async () => {
  const page = await open(true);
  const logFrom = stack.handler.lines.length;
  await page.click('#ask');
  await page.waitForSelector('#part[data-hop="2"]', { timeout: 30_000 });
  await page.goto('about:blank');
  // The hop's own connection goes with the page (and its end cancels the generation too): the cancel
  // request in the handler's log is the one the page sent as it left.
  await stack.waitForRequestLogs((l) => l.route === '/api/chat/cancel' && l.method === 'POST', 1, { from: logFrom, timeoutMs: 15_000 });
  const cancel = stack.requestLog(logFrom).find((l) => l.route === '/api/chat/cancel' && l.method === 'POST');
  assert.equal(cancel.status, 204);
  await page.close();
});
