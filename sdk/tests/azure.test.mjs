// AzureOpenAI (openai on npm) with azureADTokenProvider, against the
// handler in AUTH_MODE=entra: the client of an Azure OpenAI resource
// changes only its endpoint. Its token comes from the simulator's local
// Entra ID; an API key, which Azure OpenAI would take, is refused here.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AzureOpenAI } from 'openai';

import { ENTRA, startStack } from '../../e2e/harness.mjs';
import { assertDeadline, assertFast503Retried, assertLong429Surfaced, assertMidStreamCut, assertToolCall } from './counted.mjs';

let stack;
let token;

before(async () => {
  stack = await startStack({ entra: true });
  const r = await fetch(`${stack.sim}/${ENTRA.tenant}/oauth2/v2.0/token`, { method: 'POST', body: new URLSearchParams({ scope: `${ENTRA.audience}/${ENTRA.scope}` }) });
  token = (await r.json()).access_token;
  assert.ok(token, 'the local issuer minted a token');
});

after(async () => {
  await stack?.stop();
});

const azure = (options) => new AzureOpenAI({ endpoint: stack.api, apiVersion: '2024-10-21', deployment: 'gpt-4o-mini', ...options });

test('AzureOpenAI with azureADTokenProvider is answered, and the log names the caller', async () => {
  const logFrom = stack.handler.lines.length;
  const client = azure({ azureADTokenProvider: async () => token });
  const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Count to 3.' }] });
  assert.equal(res.choices[0].message.content, '1, 2, 3.');
  const line = await stack.waitForRequestLog((l) => l.route === '/openai/deployments/{deployment}/chat/completions', { from: logFrom });
  assert.equal(line.status, 200);
  assert.equal(line.callerOid, ENTRA.oid);
});

test('AzureOpenAI streams', async () => {
  const client = azure({ azureADTokenProvider: async () => token });
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Count to 10.' }], stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, '1, 2, 3, 4, 5, 6, 7, 8, 9, 10.');
  await stack.waitForRequestLog((l) => l.stream === true && l.status === 200);
});

test('an API key is never accepted from a caller: 401, not retried, nothing upstream', async () => {
  const simFrom = stack.simulator.lines.length;
  const logFrom = stack.handler.lines.length;
  const client = azure({ apiKey: 'an-azure-openai-key' });
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }), (err) => {
    assert.ok(err instanceof AzureOpenAI.AuthenticationError, `a 401, got ${err}`);
    assert.equal(err.code, 'unauthenticated');
    return true;
  });
  await stack.waitForRequestLog((l) => l.status === 401, { from: logFrom });
  assert.equal(stack.requestLog(logFrom).filter((l) => l.route?.startsWith('/openai/')).length, 1, 'one request: the SDK did not retry');
  assert.equal(stack.upstreamLog(simFrom).length, 0);
});

// The cases of every Node client (counted.mjs), with AzureOpenAI: the retry
// rule reaches an Azure client the same way (x-should-retry).
const ask = (content, extra) => azure({ azureADTokenProvider: async () => token }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

test('AzureOpenAI: a tool call', () => assertToolCall(stack, ask));

test('AzureOpenAI: the deadline is one upstream call, the error carries timebox\'s message and code', () => assertDeadline(stack, ask));

test('AzureOpenAI: a fast 503 is retried by the SDK, then answered: two upstream calls', () => assertFast503Retried(stack, ask, 'azure-503'));

test('AzureOpenAI: a 429 whose wait does not fit is surfaced at once: one upstream call', () => assertLong429Surfaced(stack, ask, 'azure-429'));

test('AzureOpenAI: a mid-stream cut is raised as an error, after the text so far', () => assertMidStreamCut(stack, ask));
