import * as React from 'react';
import type { ChatResponse, Usage } from '@timebox/client';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { setIconOptions } from '@fluentui/react';

import Ask from '../components/Ask';
import { askOverAad, streamOverAadToken } from '../timebox';
import { aadHttpClientFactory, aadTokenProviderFactory, configurationV1 } from './aadHttpClient';
import { TimeboxServer, type Exchange } from './server';

const APP_ID_URI = 'api://contoso-timebox';

const ok = (answer: string, requestId = 'req-ok'): ChatResponse => ({
  answer, finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 3, totalTokens: 12 },
  requestId, elapsedMs: 12, upstreamAttempts: 1, truncated: false,
});

// SharePoint registers Fluent UI's icon font; the tests do not need it.
setIconOptions({ disableWarnings: true });

let server: TimeboxServer;
let resources: string[];

beforeEach(async () => {
  server = await TimeboxServer.start();
  resources = [];
});

afterEach(async () => {
  await server.close();
});

const restoreFetch: (() => void)[] = [];
afterEach(() => restoreFetch.splice(0).forEach((restore) => restore()));

/**
 * Records, for every request the web part sends, its path and whether it asks
 * to outlive the page (fetch's keepalive), then sends it: the flag is not on the wire.
 */
function watchKeepalive(): { path: string; keepalive: boolean }[] {
  const real = globalThis.fetch;
  const sent: { path: string; keepalive: boolean }[] = [];
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push({ path: new URL(request.url).pathname, keepalive: request.keepalive });
    return real(request);
  }) as typeof fetch;
  restoreFetch.push(() => (globalThis.fetch = real));
  return sent;
}

/** The page goes away (a tab closed, another site), as the browser tells it. */
function leavePage(): void {
  act(() => {
    window.dispatchEvent(new Event('pagehide'));
  });
}

// The counter ticks once a minute unless a test watches it, so React renders only on what the test does.
function renderAsk(tickMs = 60_000): ReturnType<typeof render> {
  return render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={tickMs} />);
}

function renderStreaming(): ReturnType<typeof render> {
  return render(<Ask ask={streamOverAadToken(aadTokenProviderFactory(resources), server.url, APP_ID_URI)} tickMs={60_000} />);
}

/** The next request at the server, with React's updates on the way flushed. */
async function arrived(): Promise<Exchange> {
  let ex: Exchange | undefined;
  await act(async () => {
    ex = await server.next();
  });
  return ex!;
}

async function ask(question: string): Promise<Exchange> {
  fireEvent.change(screen.getByLabelText(/Question/), { target: { value: question } });
  fireEvent.click(screen.getByRole('button', { name: 'Ask' }));
  return arrived();
}

/** Lets the client see an answer the server just sent, and React render it. */
async function settled(text: RegExp | string): Promise<HTMLElement> {
  return screen.findByText(text, undefined, { timeout: 30_000 });
}

/** ex is the cancel of the long answer by its cursor, with the token for the app. */
function expectCancel(ex: Exchange, cursor: string): void {
  expect(ex.method).toBe('POST');
  expect(ex.url).toBe('/api/chat/cancel');
  expect(ex.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
  expect(JSON.parse(ex.body)).toEqual({ cursor });
}

/** What a long answer cancelled in its second hop sent: only the cancel asks to outlive the page. */
const CANCELLED_IN_SECOND_HOP = [
  { path: '/api/chat', keepalive: false },
  { path: '/api/chat/continue', keepalive: false },
  { path: '/api/chat/cancel', keepalive: true },
];

const rows = (): string[][] =>
  within(screen.getByRole('table')).getAllByRole('row').slice(1).map((r) => within(r).getAllByRole('cell').map((c) => c.textContent ?? ''));

describe('the Ask web part over AadHttpClient (whole answers)', () => {
  it('sends the question through AadHttpClient with the token for the app and shows the answer in a live region', async () => {
    renderAsk();
    const ex = await ask('  What is the leave policy?  ');
    expect(ex.method).toBe('POST');
    expect(ex.url).toBe('/api/chat');
    expect(ex.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    expect(Number(ex.headers['x-client-timeout-ms'])).toBeGreaterThan(0);
    expect(JSON.parse(ex.body)).toEqual({ messages: [{ role: 'user', content: 'What is the leave policy?' }] });
    expect(resources).toEqual([APP_ID_URI]);

    ex.reply(200, ok('Twenty-five days a year.'));
    const answer = await settled('Twenty-five days a year.');
    expect(answer.closest('[aria-live="polite"]')).not.toBeNull();
    expect(rows()).toEqual([['1', '200', expect.stringMatching(/ms|s$/), 'success', '', '']]);
    expect(screen.getByRole('timer').textContent).toMatch(/^Answered in /);
    expect(screen.getByText(/^finish stop, 12 tokens \(9 prompt \+ 3 completion\), 1 upstream attempt, server 12 ms/)).toBeTruthy();
    expect(screen.getByText('req-ok')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Cancel' })).toHaveProperty('disabled', true);
  });

  it('retries a fast 503 after the wait the server asked for, and shows both attempts', async () => {
    renderAsk();
    const first = await ask('hello');
    first.reply(503, { error: { code: 'upstream_unavailable', message: 'The AI service is briefly unavailable. Try again in a moment.', requestId: 'r1' } }, { 'retry-after-ms': '5' });
    const second = await arrived();
    expect(second.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    second.reply(200, ok('Hi.'));
    await settled('Hi.');
    expect(rows()).toEqual([
      ['1', '503', expect.any(String), 'retry', '5 ms', 'upstream_unavailable'],
      ['2', '200', expect.any(String), 'success', '', ''],
    ]);
  });

  it('shows the readable error with its "try again in N s" and the request id, without retrying a wait too long', async () => {
    renderAsk();
    const ex = await ask('hello');
    ex.reply(429, { error: { code: 'rate_limited', message: 'The AI service is busy. Try again in 40 s.', requestId: 'req-429' } }, { 'retry-after': '40', 'retry-after-ms': '40000' }); // as timebox sends a 429
    const error = await settled('The AI service is busy. Try again in 40 s.');
    expect(error.closest('[role="alert"], .ms-MessageBar')).not.toBeNull();
    expect(screen.getByText('req-429')).toBeTruthy();
    expect(rows()).toEqual([['1', '429', expect.any(String), 'stop: wait_too_long', '40.0 s', 'rate_limited']]);
    expect(screen.getByRole('timer').textContent).toMatch(/^Failed after /);
    expect(screen.getByRole('button', { name: 'Ask' })).toHaveProperty('disabled', false);
  });

  it('shows the running counter while the attempt is in flight', async () => {
    renderAsk(20);
    const ex = await ask('hello');
    await settled(/^Attempt 1 running: \d+ ms \(total/);
    ex.reply(200, ok('Done.'));
    await settled('Done.');
  });

  it('cancels the request in flight from the Cancel button: the connection closes and the attempt gets its own row', async () => {
    renderAsk();
    const ex = await ask('a long one');
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    await act(() => ex.abandoned);
    await settled(/^Cancelled after /);
    expect(rows()).toEqual([['1', '', expect.stringMatching(/ms|s$/), 'cancelled by the user', '', '']]);
    expect(screen.getByText(/You cancelled the question/)).toBeTruthy();
  });

  it('cancels with Escape from the question box', async () => {
    renderAsk();
    const ex = await ask('a long one');
    fireEvent.keyDown(screen.getByLabelText(/Question/), { key: 'Escape' });
    await act(() => ex.abandoned);
    await settled(/^Cancelled after /);
  });

  it('sends with Ctrl+Enter from the question box', async () => {
    renderAsk();
    const box = screen.getByLabelText(/Question/);
    fireEvent.change(box, { target: { value: 'by keyboard' } });
    fireEvent.keyDown(box, { key: 'Enter', ctrlKey: true });
    const ex = await arrived();
    expect(JSON.parse(ex.body).messages[0].content).toBe('by keyboard');
    ex.reply(200, ok('Yes.'));
    await settled('Yes.');
  });

  it('cancels the request in flight when the web part goes away', async () => {
    const { unmount } = renderAsk();
    const ex = await ask('a long one');
    act(() => unmount());
    await act(() => ex.abandoned);
  });

  it('follows a long answer past its first hop (202), says "still writing, part 2", and a page that goes away cancels it with keepalive', async () => {
    const sent = watchKeepalive();
    renderAsk();
    const first = await ask('A very long report');
    first.reply(202, { status: 'in_progress', cursor: 'cursor-2', partial: { answer: 'Part one. ' } }, { 'retry-after': '1', 'retry-after-ms': '5' });
    const second = await arrived();
    expect(second.url).toBe('/api/chat/continue');
    expect(second.headers.accept).toBe('application/json');
    expect(second.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    expect(JSON.parse(second.body)).toEqual({ cursor: 'cursor-2' });
    expect((await screen.findByTestId('part')).textContent).toBe('still writing, part 2');
    expect(screen.getByRole('timer').textContent).toMatch(/^Attempt 1 running: /);

    leavePage();
    const cancel = await arrived();
    expectCancel(cancel, 'cursor-2');
    expect(sent).toEqual(CANCELLED_IN_SECOND_HOP);
    cancel.reply(204, '');
  });

  it('asks for the Function App URL and the application ID URI until both are set', async () => {
    render(<Ask ask={undefined} />);
    await settled(/Set the Function App URL and its application ID URI/);
    expect(screen.queryByRole('button', { name: 'Ask' })).toBeNull();
  });
});

const answerText = (): string => screen.getByRole('region', { name: 'Answer' }).textContent ?? '';

describe('the Ask web part over AadTokenProvider and fetch (streamed answers)', () => {
  it('shows the text as it is written, before the answer is complete, with the token for the app', async () => {
    renderStreaming();
    const ex = await ask('Tell me a story');
    expect(ex.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    expect(ex.headers.accept).toBe('text/event-stream');
    expect(JSON.parse(ex.body)).toEqual({ messages: [{ role: 'user', content: 'Tell me a story' }] });
    expect(resources).toEqual([APP_ID_URI]);

    const s = ex.stream();
    s.event('delta', { text: 'Once upon' });
    await waitFor(() => expect(answerText()).toBe('Once upon'));
    expect(screen.getByRole('timer').textContent).toMatch(/^Attempt 1 streaming the answer: /);
    expect(screen.getByRole('button', { name: 'Cancel' })).toHaveProperty('disabled', false);

    s.event('delta', { text: ' a time.' });
    s.event('done', ok('Once upon a time.', 'req-stream'));
    s.end();
    await settled(/^Answered in /);
    expect(answerText()).toBe('Once upon a time.');
    expect(rows()).toEqual([['1', '200', expect.any(String), 'success', '', '']]);
  });

  it('keeps the text so far, marked incomplete, with the readable reason under it when the stream ends in an error', async () => {
    renderStreaming();
    const ex = await ask('A long essay');
    const s = ex.stream();
    s.event('delta', { text: 'The first half' });
    s.event('error', {
      error: { code: 'deadline_exceeded', message: 'The AI service did not answer in time, so the request was stopped.', requestId: 'req-deadline' },
      partial: true,
    });
    s.end();
    await settled('The AI service did not answer in time, so the request was stopped.');
    expect(answerText()).toBe('The first halfIncomplete: the answer stopped here.');
    expect(screen.getByText('req-deadline')).toBeTruthy();
    expect(rows()).toEqual([['1', '200', expect.any(String), 'stop: stream_failed', '', 'deadline_exceeded']]);
  });

  it('retries a fast 503 before the first piece, then streams', async () => {
    renderStreaming();
    const first = await ask('hello');
    first.reply(503, { error: { code: 'upstream_unavailable', message: 'The AI service is briefly unavailable. Try again in a moment.', requestId: 'r1' } }, { 'retry-after-ms': '5' });
    const s = (await arrived()).stream();
    s.event('delta', { text: 'Hi.' });
    s.event('done', ok('Hi.'));
    s.end();
    await settled(/^Answered in /);
    expect(rows().map((r) => r[3])).toEqual(['retry', 'success']);
  });

  it('cancels a stream in flight: the connection closes and the text so far stays, marked incomplete', async () => {
    renderStreaming();
    const ex = await ask('A long essay');
    const s = ex.stream();
    s.event('delta', { text: 'Partly' });
    await waitFor(() => expect(answerText()).toBe('Partly'));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    await act(() => ex.abandoned);
    await settled(/^Cancelled after /);
    expect(answerText()).toBe('PartlyIncomplete: the answer stopped here.');
    expect(rows()).toEqual([['1', '200', expect.any(String), 'cancelled by the user', '', '']]);
  });
});

describe('the Ask web part and a long answer across hops (streamed)', () => {
  /**
   * Asks, streams the first hop's text (and, once it shows, does duringFirst) and its continue event, and returns
   * the second hop's stream once its text shows.
   */
  async function secondHop(duringFirst?: () => void): Promise<{ second: Exchange; stream: ReturnType<Exchange['stream']> }> {
    const first = await ask('A very long report');
    const s1 = first.stream();
    s1.event('delta', { text: 'Part one. ' });
    if (duringFirst) {
      await waitFor(() => expect(answerText()).toBe('Part one. '));
      duringFirst();
    }
    s1.event('continue', { cursor: 'cursor-2' });
    s1.end();
    const second = await arrived();
    expect(second.url).toBe('/api/chat/continue');
    const stream = second.stream();
    stream.event('delta', { text: 'Part two' });
    await waitFor(() => expect(answerText()).toBe('Part one. Part two'));
    return { second, stream };
  }

  it('shows one answer growing across hops, "still writing, part 2" while it does, and each part\'s attempts', async () => {
    renderStreaming();
    const first = await ask('A very long report');
    const s1 = first.stream();
    s1.event('delta', { text: 'Part one. ' });
    await waitFor(() => expect(answerText()).toBe('Part one. '));
    expect(screen.queryByTestId('part')).toBeNull();
    s1.event('continue', { cursor: 'cursor-2' });
    s1.end();

    const second = await arrived();
    expect(second.method).toBe('POST');
    expect(second.url).toBe('/api/chat/continue');
    expect(second.headers.accept).toBe('text/event-stream');
    expect(second.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    expect(JSON.parse(second.body)).toEqual({ cursor: 'cursor-2' });
    expect((await screen.findByTestId('part')).textContent).toBe('still writing, part 2');
    expect(answerText()).toBe('Part one. ');

    const s2 = second.stream();
    s2.event('delta', { text: 'Part two.' });
    await waitFor(() => expect(answerText()).toBe('Part one. Part two.'));
    expect(screen.getByRole('timer').textContent).toMatch(/^Attempt 1 streaming the answer: /);
    s2.event('done', ok('Part one. Part two.', 'req-long'));
    s2.end();
    await settled(/^Answered in /);
    expect(answerText()).toBe('Part one. Part two.');
    expect(screen.queryByTestId('part')).toBeNull();
    expect(rows().map((r) => [r[0], r[1], r[3]])).toEqual([
      ['1', '200', 'success'],
      ['1 (part 2)', '200', 'success'],
    ]);

    // Answered, nothing is left to cancel: a page that goes away now sends nothing, so the next request is the next question.
    leavePage();
    expect((await ask('Another')).url).toBe('/api/chat');
  });

  it('Cancel during a later hop stops the generation upstream: the connection closes and the cancel carries the last cursor', async () => {
    renderStreaming();
    const { second } = await secondHop();
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    await act(() => second.abandoned);
    const cancel = await arrived();
    expectCancel(cancel, 'cursor-2');
    cancel.reply(204, '');
    await settled(/^Cancelled after /);
    expect(answerText()).toBe('Part one. Part twoIncomplete: the answer stopped here.');
    expect(screen.queryByTestId('part')).toBeNull();
  });

  it('a page that goes away cancels the long answer with a request that outlives it; in the first hop there is nothing to cancel', async () => {
    const sent = watchKeepalive();
    renderStreaming();
    // No cursor yet: the first hop's connection, which goes with the page, is what ends it.
    await secondHop(leavePage);

    leavePage();
    const cancel = await arrived();
    expectCancel(cancel, 'cursor-2');
    expect(sent).toEqual(CANCELLED_IN_SECOND_HOP);
    cancel.reply(204, '');
  });

  it('the web part going away during a later hop cancels the long answer upstream, with keepalive', async () => {
    const sent = watchKeepalive();
    const { unmount } = renderStreaming();
    const { second } = await secondHop();
    act(() => unmount());
    await act(() => second.abandoned);
    const cancel = await arrived();
    expectCancel(cancel, 'cursor-2');
    expect(sent).toEqual(CANCELLED_IN_SECOND_HOP);
    cancel.reply(204, '');
  });
});

describe('the Ask web part and the token quota', () => {
  const window = (used: number, limit: number, reserved = 0): Usage => ({ user: { day: { used, reserved, limit, resetsAt: '2026-12-02T00:00:00Z' } } });

  it('shows the tokens used today, read on load and again after each answer', async () => {
    render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={60_000} showUsage />);
    const load = await arrived();
    expect(load.method).toBe('GET');
    expect(load.url).toBe('/api/usage');
    expect(load.headers.authorization).toBe(`Bearer token-for-${APP_ID_URI}`);
    load.reply(200, window(12_340, 200_000));
    expect((await screen.findByTestId('usage')).textContent).toBe('12,340 of 200,000 tokens used today');

    const ex = await ask('What is the leave policy?');
    ex.reply(200, ok('Twenty-five days a year.'));
    await settled('Twenty-five days a year.');
    const again = await arrived();
    expect(again.url).toBe('/api/usage');
    again.reply(200, window(12_352, 200_000));
    await waitFor(() => expect(screen.getByTestId('usage').textContent).toBe('12,352 of 200,000 tokens used today'));
  });

  it('shows the tokens held by answers under way apart from those used', async () => {
    render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={60_000} showUsage />);
    (await arrived()).reply(200, window(501, 2_000, 1_499));
    expect((await screen.findByTestId('usage')).textContent).toBe('501 of 2,000 tokens used today, 1,499 held by answers under way');
  });

  it('shows the limit answer at once, in its own words, and never asks again', async () => {
    render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={60_000} showUsage />);
    (await arrived()).reply(200, window(200_000, 200_000));
    await screen.findByTestId('usage');
    const ex = await ask('One more?');
    const message = 'Your daily limit of 200,000 tokens is used up. It resets at 00:00 UTC, in 5 h 12 min.';
    ex.reply(429, { error: { code: 'quota_exceeded', message, requestId: 'req-q' } }, { 'x-should-retry': 'false', 'retry-after': '18720' });
    expect((await screen.findByTestId('error')).textContent).toBe(message);
    expect(rows()).toEqual([['1', '429', expect.stringMatching(/ms|s$/), 'stop: should_not_retry', '', 'quota_exceeded']]);
    (await arrived()).reply(200, window(200_000, 200_000));
    expect(screen.getByTestId('usage').textContent).toBe('200,000 of 200,000 tokens used today');
  });

  it('says usage is unavailable at once when the quota store is down, and answers all the same', async () => {
    render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={60_000} showUsage />);
    const down = { error: { code: 'quota_unavailable', message: 'The token quota cannot be checked right now. Try again in 5 s.', requestId: 'req-u' } };
    (await arrived()).reply(503, down, { 'retry-after': '5', 'retry-after-ms': '5000' });
    expect((await screen.findByTestId('usage')).textContent).toBe('Token usage is unavailable right now.');
    const ex = await ask('hi');
    expect(ex.url).toBe('/api/chat');
    ex.reply(200, ok('Hello.'));
    await settled('Hello.');
    const again = await arrived();
    expect(again.url).toBe('/api/usage');
    again.reply(503, down, { 'retry-after': '5', 'retry-after-ms': '5000' });
    await waitFor(() => expect(screen.getByTestId('usage').textContent).toBe('Token usage is unavailable right now.'));
  });

  it('shows no line when the deployment sets no quota', async () => {
    render(<Ask ask={askOverAad(aadHttpClientFactory(resources), configurationV1, server.url, APP_ID_URI)} tickMs={60_000} showUsage />);
    (await arrived()).reply(200, { user: {}, tenant: {} });
    const ex = await ask('hi');
    ex.reply(200, ok('Hello.'));
    await settled('Hello.');
    (await arrived()).reply(200, { user: {}, tenant: {} });
    expect(screen.queryByTestId('usage')).toBeNull();
  });
});
