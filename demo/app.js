// The demo web part: the question box, the scenario picker and the timeline,
// on top of the built client (served from /client/ by demo/serve.mjs).
import { TimeboxClient, TimeboxError } from '/client/index.js';
import { scenarios } from './scenarios.js';

const config = window.TIMEBOX_CONFIG ?? { api: 'http://127.0.0.1:7071', thresholdMs: 30_000, budgetMs: 200_000 };
const $ = (id) => document.getElementById(id);
const list = scenarios(config);

$('api').textContent = config.api;
for (const s of list) $('scenario').append(new Option(s.label, s.id));
const pick = () => list.find((s) => s.id === $('scenario').value) ?? list[0];
const params = new URLSearchParams(location.search);
if (params.has('scenario')) $('scenario').value = params.get('scenario');
$('expect').textContent = `Expect: ${pick().expect}.`;
$('scenario').addEventListener('change', () => ($('expect').textContent = `Expect: ${pick().expect}.`));

const client = new TimeboxClient({
  baseUrl: config.api,
  policy: { fastFailureMs: config.thresholdMs },
});

const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 1 : 2)} s` : `${Math.round(n)} ms`);

function row(e) {
  const tr = document.createElement('tr');
  tr.className = e.decision === 'success' ? 'success' : e.retry ? 'retry' : 'stop';
  const decision = e.decision === 'success' ? 'success' : e.retry ? 'retry' : `stop: ${e.decision}`;
  const wait = e.retry || e.decision === 'wait_too_long' ? ms(e.waitMs) : '';
  for (const text of [e.attempt, e.status === 0 ? 'network error' : e.status, ms(e.elapsedMs), decision, wait, e.code ?? '', '']) {
    const td = document.createElement('td');
    td.textContent = String(text);
    tr.append(td);
  }
  $('timeline').tBodies[0].append(tr);
}

// fillServerTime puts each attempt's Server-Timing (where the handler says the
// time went) in the last column: the browser records one resource entry per
// attempt, and the handler's Timing-Allow-Origin lets this page read it.
function fillServerTime() {
  const entries = performance.getEntriesByType('resource').filter((e) => e.name === `${config.api}/api/chat`);
  const rows = [...$('timeline').tBodies[0].rows];
  rows.forEach((tr, i) => {
    const st = entries[i]?.serverTiming ?? [];
    tr.cells[tr.cells.length - 1].textContent = st.filter((t) => t.name !== 'prompt').map((t) => `${t.name} ${ms(t.duration)}`).join(', ');
  });
}

// Entries can land just after the call settles: fill again as they arrive.
new PerformanceObserver(fillServerTime).observe({ type: 'resource' });

function details(pairs) {
  const dl = $('details');
  dl.replaceChildren();
  for (const [k, v] of pairs) {
    if (v === undefined || v === '') continue;
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = String(v);
    dd.dataset.field = k;
    dl.append(dt, dd);
  }
  dl.hidden = false;
}

function setState(state) {
  $('state').textContent = state;
  $('state').dataset.state = state;
  $('ask').disabled = state === 'running';
  $('cancel').disabled = state !== 'running';
}

let controller;
$('cancel').addEventListener('click', () => controller?.abort(new DOMException('Cancelled by the user.', 'AbortError')));

$('ask-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  controller = new AbortController();
  $('timeline').tBodies[0].replaceChildren();
  for (const id of ['answer', 'error', 'details']) $(id).hidden = true;
  $('total').textContent = '';
  performance.clearResourceTimings();
  setState('running');
  const directive = pick().directive();
  const content = directive ? `${directive} ${$('question').value}` : $('question').value;
  const started = performance.now();
  try {
    const r = await client.chat({ messages: [{ role: 'user', content }] }, { signal: controller.signal, onAttempt: row });
    $('answer').textContent = r.answer;
    $('answer').hidden = false;
    details([
      ['requestId', r.requestId], ['finishReason', r.finishReason], ['upstreamAttempts', r.upstreamAttempts],
      ['serverElapsedMs', r.elapsedMs], ['usage', JSON.stringify(r.usage)],
    ]);
    setState('answered');
  } catch (err) {
    if (err instanceof TimeboxError) {
      $('error').textContent = err.message;
      details([
        ['status', err.status], ['code', err.code], ['requestId', err.requestId], ['attempts', err.attempts],
        ['elapsedMs', Math.round(err.elapsedMs)], ['retryAfterMs', err.retryAfterMs], ['timeout', err.timeout], ['reason', err.reason],
      ]);
    } else {
      $('error').textContent = err?.message ?? String(err);
    }
    $('error').hidden = false;
    setState('failed');
  } finally {
    fillServerTime();
    $('total').textContent = `Total ${ms(performance.now() - started)}.`;
  }
});
