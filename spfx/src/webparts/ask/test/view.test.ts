import { TimeboxError, type AttemptEvent, type ChatResponse } from '@timebox/client';

import { answerDetails, answered, attemptLabel, attempted, duration, errorView, failed, hopped, partLine, started, statusLine, streamed } from '../view';

const event = (e: Partial<AttemptEvent>): AttemptEvent => ({
  attempt: 1, status: 200, elapsedMs: 120, decision: 'success', retry: false, waitMs: 0, timeout: false, ...e,
});

const response: ChatResponse = {
  answer: 'Forty-two.', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
  requestId: 'req-1', elapsedMs: 100, upstreamAttempts: 1, truncated: false,
};

describe('duration', () => {
  it('writes ms below a second, two decimals below ten seconds, one above', () => {
    expect(duration(850.4)).toBe('850 ms');
    expect(duration(2345)).toBe('2.35 s');
    expect(duration(31_400)).toBe('31.4 s');
  });
});

describe('the timeline', () => {
  it('has one row per attempt: status, elapsed, decision, wait, code', () => {
    let v = started(0);
    v = attempted(v, event({ attempt: 1, status: 503, elapsedMs: 40, decision: 'retry', retry: true, waitMs: 600, code: 'upstream_unavailable' }), 40);
    v = attempted(v, event({ attempt: 2, status: 0, elapsedMs: 5, decision: 'retry', retry: true, waitMs: 1200 }), 645);
    v = attempted(v, event({ attempt: 3, status: 200, elapsedMs: 900 }), 2745);
    expect(v.rows).toEqual([
      { attempt: 1, status: '503', elapsed: '40 ms', decision: 'retry', wait: '600 ms', code: 'upstream_unavailable', kind: 'retry' },
      { attempt: 2, status: 'network error', elapsed: '5 ms', decision: 'retry', wait: '1.20 s', code: '', kind: 'retry' },
      { attempt: 3, status: '200', elapsed: '900 ms', decision: 'success', wait: '', code: '', kind: 'success' },
    ]);
  });

  it('shows the wait that was too long to make, and no wait on other stops', () => {
    let v = started(0);
    v = attempted(v, event({ status: 429, decision: 'wait_too_long', waitMs: 40_000, code: 'rate_limited' }), 10);
    expect(v.rows[0]).toMatchObject({ decision: 'stop: wait_too_long', wait: '40.0 s', kind: 'stop' });
    v = attempted(started(0), event({ status: 500, elapsedMs: 31_000, decision: 'not_retryable', waitMs: 0 }), 31_000);
    expect(v.rows[0]).toMatchObject({ decision: 'stop: not_retryable', wait: '', kind: 'stop' });
  });
});

describe('the running counter', () => {
  it('counts the attempt in flight and the call in total', () => {
    const v = started(1000);
    expect(statusLine(v, 3500)).toBe('Attempt 1 running: 2.50 s (total 2.50 s).');
  });

  it('counts down a wait, then counts the next attempt from the end of the wait', () => {
    const v = attempted(started(0), event({ status: 503, elapsedMs: 100, decision: 'retry', retry: true, waitMs: 2000 }), 100);
    expect(statusLine(v, 600)).toBe('Waiting 1.50 s before attempt 2 (total 600 ms).');
    expect(statusLine(v, 2600)).toBe('Attempt 2 running: 500 ms (total 2.60 s).');
  });

  it('stops when the call ends', () => {
    const v = answered(attempted(started(0), event({}), 1200), response, 1200);
    expect(statusLine(v, 99_999)).toBe('Answered in 1.20 s.');
    expect(v.answer).toBe('Forty-two.');
    expect(v.details).toBe('finish stop, 3 tokens (1 prompt + 2 completion), 1 upstream attempt, server 100 ms');
    expect(answerDetails({ ...response, upstreamAttempts: 2, truncated: true })).toBe(
      'finish stop, 3 tokens (1 prompt + 2 completion), 2 upstream attempts, server 100 ms, material cut to fit the model',
    );
  });
});

describe('errors', () => {
  it("shows the client's readable message, its code and request id", () => {
    const err = new TimeboxError('The AI service is busy. Try again in 40 s.', {
      status: 429, code: 'rate_limited', requestId: 'req-9', attempts: 1, elapsedMs: 30, retryAfterMs: 40_000, timeout: false, reason: 'wait_too_long',
    });
    const v = failed(started(0), err, 30, false);
    expect(v.phase).toBe('failed');
    expect(v.error).toEqual({ message: 'The AI service is busy. Try again in 40 s.', requestId: 'req-9', code: 'rate_limited' });
    expect(statusLine(v, 5000)).toBe('Failed after 30 ms.');
  });

  it('shows anything else by its message', () => {
    expect(errorView(new Error('token refused'))).toEqual({ message: 'token refused' });
  });

  it('shows the attempt the client reports cancelled, and adds no row of its own', () => {
    let v = attempted(started(0), event({ status: 0, elapsedMs: 700, decision: 'cancelled', retry: false, waitMs: 0 }), 700);
    v = failed(v, new DOMException('Cancelled by the user.', 'AbortError'), 700, true);
    expect(v.phase).toBe('cancelled');
    expect(v.rows).toEqual([{ attempt: 1, status: '', elapsed: '700 ms', decision: 'cancelled by the user', wait: '', code: '', kind: 'cancelled' }]);
    expect(statusLine(v, 9999)).toBe('Cancelled after 700 ms.');
  });

  it('gives a cancel during a wait its own row: the next attempt was never sent', () => {
    let v = attempted(started(0), event({ status: 503, elapsedMs: 100, decision: 'retry', retry: true, waitMs: 5000 }), 100);
    v = failed(v, new DOMException('Cancelled by the user.', 'AbortError'), 1600, true);
    expect(v.rows[1]).toEqual({ attempt: 2, status: '', elapsed: '', decision: 'cancelled by the user (before it was sent)', wait: '', code: '', kind: 'cancelled' });
    expect(statusLine(v, 9999)).toBe('Cancelled after 1.60 s.');
  });
});

describe('a streamed answer', () => {
  it('shows the text so far and says the answer is arriving', () => {
    const v = streamed(streamed(started(0), 'Once'), 'Once upon');
    expect(v.answer).toBe('Once upon');
    expect(statusLine(v, 1500)).toBe('Attempt 1 streaming the answer: 1.50 s (total 1.50 s).');
  });

  it('replaces the text with the whole answer when it is done', () => {
    const v = answered(streamed(started(0), 'Once upon'), { ...response, answer: 'Once upon a time.' }, 2000);
    expect(v).toMatchObject({ phase: 'answered', answer: 'Once upon a time.', partial: false });
  });

  it("keeps the failed call's partial text, marked partial, with the readable message", () => {
    const err = new TimeboxError('The AI service did not answer in time.', {
      status: 200, code: 'deadline_exceeded', attempts: 1, elapsedMs: 200_000, timeout: true, reason: 'stream_failed', partial: { answer: 'The first half' },
    });
    const v = failed(streamed(started(0), 'The first'), err, 200_000, false);
    expect(v).toMatchObject({ phase: 'failed', answer: 'The first half', partial: true, error: { message: 'The AI service did not answer in time.' } });
  });

  it('keeps what had streamed when the user cancels, and ignores pieces after the call ended', () => {
    let v = streamed(started(0), 'Partly');
    v = failed(v, new DOMException('Cancelled by the user.', 'AbortError'), 900, true);
    expect(v).toMatchObject({ phase: 'cancelled', answer: 'Partly', partial: true });
    expect(streamed(v, 'Partly more')).toBe(v);
  });

  it('marks nothing partial when nothing had arrived', () => {
    const v = failed(started(0), new Error('token refused'), 10, false);
    expect(v).toMatchObject({ phase: 'failed', answer: undefined, partial: false });
  });
});

describe('a long answer across hops', () => {
  it('says "still writing, part N" while it runs past its first hop, and counts each part\'s attempts from 1', () => {
    let v = streamed(attempted(started(0), event({ attempt: 1, elapsedMs: 200_000 }), 200_000), 'Part one. ');
    expect(partLine(v)).toBeUndefined();
    v = hopped(v, 2, 200_010);
    expect(partLine(v)).toBe('still writing, part 2');
    expect(statusLine(v, 201_010)).toBe('Attempt 1 streaming the answer: 1.00 s (total 201.0 s).');
    v = attempted(v, event({ attempt: 1, elapsedMs: 150_000, hop: 2 }), 350_010);
    expect(v.rows.map(attemptLabel)).toEqual(['1', '1 (part 2)']);
    v = hopped(v, 3, 350_020);
    expect(partLine(v)).toBe('still writing, part 3');
    expect(partLine(answered(v, response, 400_000))).toBeUndefined();
  });

  it('gives a cancel between hops a row of the part it would have been', () => {
    const v = failed(hopped(started(0), 2, 1000), new DOMException('Cancelled by the user.', 'AbortError'), 1000, true);
    expect(v.rows.map(attemptLabel)).toEqual(['1 (part 2)']);
    expect(partLine(v)).toBeUndefined();
  });
});
