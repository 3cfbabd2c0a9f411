// The demo web part: the question box, the scenario picker and the timeline,
// on top of the built client (served from /client/ by demo/serve.mjs).
import { TimeboxClient, TimeboxError, bearerTransport, usageLine } from '/client/index.js';
import { scenarios } from './scenarios.js';

const config = window.TIMEBOX_CONFIG ?? { api: 'http://127.0.0.1:7071', thresholdMs: 30_000, budgetMs: 200_000 };
const $ = (id) => document.getElementById(id);
const list = scenarios(config);

$('api').textContent = config.api;
for (const s of list) $('scenario').append(new Option(s.label, s.id));
const pick = () => list.find((s) => s.id === $('scenario').value) ?? list[0];
const params = new URLSearchParams(location.search);
if (params.has('scenario')) $('scenario').value = params.get('scenario');
if (params.get('stream') === '0') $('stream').checked = false;
// A scenario may come with a question of its own (the long answer): it goes in the box, in sight, and
// leaves with it: picking another scenario puts back the question the box had before, unless it was edited.
const ownQuestions = new Set(list.map((s) => s.question).filter(Boolean));
let usualQuestion = $('question').value;
function showScenario() {
  $('expect').textContent = `Expect: ${pick().expect}.`;
  const box = $('question');
  if (!ownQuestions.has(box.value)) usualQuestion = box.value;
  box.value = pick().question ?? usualQuestion;
}
showScenario();
$('scenario').addEventListener('change', showScenario);

// With make run's AUTH_MODE=entra the page gets a token for the test user from the local issuer (a real web
// part gets one from SPFx), kept until a minute before it expires and asked for before every attempt.
let token = { value: '', expires: 0 };
async function localToken() {
  if (Date.now() < token.expires) return token.value;
  const r = await fetch(config.tokenUrl, { method: 'POST', body: new URLSearchParams({ scope: config.tokenScope }) });
  if (!r.ok) throw new Error(`token endpoint: ${r.status}`);
  const t = await r.json();
  token = { value: t.access_token, expires: Date.now() + (t.expires_in - 60) * 1000 };
  return token.value;
}
const client = new TimeboxClient({
  baseUrl: config.api,
  policy: { fastFailureMs: config.thresholdMs },
  ...(config.tokenUrl ? { transport: bearerTransport(localToken) } : {}),
});

// The caller's quota, under the form: read when the page opens and after every answer, refused or not. It is
// information, not part of the answer: read at once or not at all (within 4 s, so a store that is down, whose
// 503 asks for a 5 s wait, is not waited for). A store that is down says so; without quotas, or on any other
// failure, the line is hidden.
async function showUsage() {
  let line;
  try {
    line = usageLine(await client.usage({ attemptTimeoutMs: 4_000, deadlineMs: 4_000 }));
  } catch (err) {
    line = err instanceof TimeboxError && err.code === 'quota_unavailable' ? 'Token usage is unavailable right now.' : undefined;
  }
  $('usage').textContent = line ?? '';
  $('usage').hidden = !line;
  $('usage').dataset.loaded = String(Date.now());
}
showUsage();

const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 1 : 2)} s` : `${Math.round(n)} ms`);
const CANCELLED = 'cancelled by the user';

// The timeline. Attempt n + 1 starts when the wait after attempt n ends (the
// client's rule: AttemptEvent.waitMs), so one ticker can show a running
// counter in the attempt's row while it runs and in its wait cell while the
// client waits, without asking the client for more than onAttempt.
const timeline = {
  row: undefined, // the <tr> of the attempt in flight, or of the attempt whose wait runs
  phase: 'idle', // 'attempt' | 'wait' | 'idle'
  since: 0, // performance.now() when the phase began
  waitMs: 0,
  ticker: undefined,

  start() {
    this.stop();
    this.attempt(1);
    this.ticker = setInterval(() => this.tick(), 100);
  },
  attempt(n) {
    const tr = document.createElement('tr');
    tr.className = 'running';
    for (const text of [n, '', '0 ms', 'running', '', '', '']) {
      const td = document.createElement('td');
      td.textContent = String(text);
      tr.append(td);
    }
    $('timeline').tBodies[0].append(tr);
    this.row = tr;
    this.phase = 'attempt';
    this.since = performance.now();
  },
  streaming() {
    if (this.phase === 'attempt') {
      this.row.cells[3].textContent = 'streaming';
      this.row.dataset.streamed = 'true';
    }
  },
  // onAttempt: the attempt in flight ended.
  ended(e) {
    // The ticker may not have opened the row yet (the attempt failed within a tick of the wait's end).
    if (this.phase === 'wait') {
      this.row.cells[4].textContent = ms(this.waitMs);
      this.attempt(e.attempt);
    }
    const tr = this.row;
    tr.className = e.decision === 'success' ? 'success' : e.decision === 'cancelled' ? 'cancelled' : e.retry ? 'retry' : 'stop';
    const decision = e.decision === 'success' ? 'success' : e.decision === 'cancelled' ? CANCELLED : e.retry ? 'retry' : `stop: ${e.decision}`;
    const wait = e.retry || e.decision === 'wait_too_long' ? ms(e.waitMs) : '';
    // Status 0 is a failure with no answer; a cancelled attempt got none either, and says so in its decision.
    const status = e.status !== 0 ? e.status : e.decision === 'cancelled' ? '' : 'network error';
    const cells = [e.attempt, status, ms(e.elapsedMs), decision, wait, e.code ?? ''];
    cells.forEach((text, i) => (tr.cells[i].textContent = String(text)));
    if (e.retry) {
      this.phase = 'wait';
      this.waitMs = e.waitMs;
      this.since = performance.now();
    } else {
      this.phase = 'idle';
    }
  },
  tick() {
    const t = performance.now() - this.since;
    if (this.phase === 'attempt') this.row.cells[2].textContent = ms(t);
    if (this.phase === 'wait') {
      if (t < this.waitMs) {
        this.row.cells[4].textContent = `${ms(t)} of ${ms(this.waitMs)}`;
      } else {
        this.row.cells[4].textContent = ms(this.waitMs);
        this.attempt(Number(this.row.cells[0].textContent) + 1);
      }
    }
  },
  // The call ended: a wait cut short by a cancel gets its own row; a running row is closed.
  finish(cancelled) {
    if (cancelled && this.phase === 'wait') {
      this.row.cells[4].textContent = ms(Math.min(this.waitMs, performance.now() - this.since));
      this.attempt(Number(this.row.cells[0].textContent) + 1);
      this.row.className = 'cancelled';
      this.row.cells[2].textContent = '0 ms';
      this.row.cells[3].textContent = `${CANCELLED} (before it was sent)`;
    }
    this.stop();
  },
  stop() {
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.phase = 'idle';
  },
};

// fillServerTime puts each attempt's Server-Timing (where the handler says the
// time went) in the last column: the browser records one resource entry per
// attempt, and the handler's Timing-Allow-Origin lets this page read it.
function fillServerTime() {
  const entries = performance.getEntriesByType('resource').filter((e) => e.name === `${config.api}/api/chat`);
  const rows = [...$('timeline').tBodies[0].rows];
  rows.forEach((tr, i) => {
    const st = (entries[i]?.serverTiming ?? []).filter((t) => t.name !== 'prompt');
    // A stream's Server-Timing goes out with its first byte: it covers the time until the stream began,
    // not the answer's whole time, which the elapsed column shows.
    const text = st.map((t) => `${t.name} ${ms(t.duration)}`).join(', ');
    tr.cells[tr.cells.length - 1].textContent = text && tr.dataset.streamed ? `until the stream began: ${text}` : text;
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
  const busy = state === 'running' || state === 'streaming';
  $('ask').disabled = busy;
  $('cancel').disabled = !busy;
}

// The whole call's running counter, next to the state.
let callTicker;
function runClock(started) {
  clearInterval(callTicker);
  callTicker = setInterval(() => ($('total').textContent = `Running ${ms(performance.now() - started)}.`), 100);
}

let controller;
$('cancel').addEventListener('click', () => controller?.abort(new DOMException('Cancelled by the user.', 'AbortError')));
// The cursor of the long answer in flight, from its latest hop. A page that goes away takes the hop's
// connection with it, but the generation goes on at Azure OpenAI until it is cancelled by its cursor, and only
// a keepalive request outlives the page.
let cursor;
window.addEventListener('pagehide', () => {
  if (cursor) client.cancel(cursor, { keepalive: true });
});

$('ask-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  controller = new AbortController();
  $('timeline').tBodies[0].replaceChildren();
  for (const id of ['answer', 'error', 'details']) $(id).hidden = true;
  $('answer').textContent = '';
  $('answer').classList.remove('partial');
  $('total').textContent = '';
  performance.clearResourceTimings();
  setState('running');
  const directive = pick().directive();
  const content = directive ? `${directive} ${$('question').value}` : $('question').value;
  const request = { messages: [{ role: 'user', content }] };
  const started = performance.now();
  runClock(started);
  timeline.start();
  $('part').textContent = '';
  $('part').dataset.hop = '1';
  // A long answer's later hops: the answer grows on, and the page says so.
  const onHop = (hop, next) => {
    cursor = next;
    $('part').textContent = `still writing, part ${hop}`;
    $('part').dataset.hop = String(hop);
  };
  const options = { signal: controller.signal, onAttempt: (e) => timeline.ended(e), onHop };
  try {
    const r = $('stream').checked
      ? await client.chatStream(request, {
        ...options,
        onDelta: (_, soFar) => {
          // The text as it is written; the page's state says the answer is on its way.
          if ($('state').dataset.state !== 'streaming') setState('streaming');
          timeline.streaming();
          $('answer').textContent = soFar;
          $('answer').hidden = false;
        },
      })
      : await client.chat(request, options);
    $('answer').textContent = r.answer;
    $('answer').hidden = false;
    details([
      ['requestId', r.requestId], ['finishReason', r.finishReason], ['upstreamAttempts', r.upstreamAttempts],
      ['serverElapsedMs', r.elapsedMs], ['usage', JSON.stringify(r.usage)],
    ]);
    setState('answered');
  } catch (err) {
    timeline.finish(controller.signal.aborted);
    if (err instanceof TimeboxError) {
      // What the model had written stays on screen, marked partial, with the reason under it.
      if (err.partial) {
        $('answer').textContent = err.partial.answer;
        $('answer').classList.add('partial');
        $('answer').hidden = false;
      } else {
        $('answer').hidden = true;
      }
      $('error').textContent = err.message;
      details([
        ['status', err.status], ['code', err.code], ['requestId', err.requestId], ['attempts', err.attempts],
        ['elapsedMs', Math.round(err.elapsedMs)], ['retryAfterMs', err.retryAfterMs], ['timeout', err.timeout], ['reason', err.reason],
        ['partialChars', err.partial?.answer.length], ['completionTokens', err.partial?.completionTokens],
      ]);
    } else {
      $('error').textContent = err?.message ?? String(err);
    }
    $('error').hidden = false;
    setState('failed');
  } finally {
    cursor = undefined;
    timeline.stop();
    clearInterval(callTicker);
    fillServerTime();
    $('total').textContent = `Total ${ms(performance.now() - started)}.`;
    await showUsage();
  }
});
