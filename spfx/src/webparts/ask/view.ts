// What the Ask web part shows, computed from what the client reports, with no
// React and no SPFx in it: the attempt timeline, the running counter, the
// answer, the part of a long answer being written and the readable error. The
// component only renders these values.
import { TimeboxError, type AttemptEvent, type ChatResponse, type Usage } from '@timebox/client';
import * as strings from 'AskWebPartStrings';

export type Phase = 'idle' | 'running' | 'answered' | 'failed' | 'cancelled';

/** One row of the attempt timeline, as text. */
export interface TimelineRow {
  attempt: number;
  /** The hop of a long answer the attempt was of (2, 3, ...); absent for the first. */
  part?: number;
  status: string;
  elapsed: string;
  decision: string;
  wait: string;
  code: string;
  /** 'success', 'retry', 'stop' or 'cancelled': the row's colour. */
  kind: 'success' | 'retry' | 'stop' | 'cancelled';
}

/** The readable error: the client's message (fit for an end user) and the facts behind it. */
export interface ErrorView {
  message: string;
  requestId?: string;
  code?: string;
}

export interface AskView {
  phase: Phase;
  /** When the call started, on the clock the view is driven with (ms). */
  startedAt: number;
  /** When the last attempt ended, and the wait it announced: tells "running" from "waiting". */
  lastEventAt: number;
  lastWaitMs: number;
  /** Attempts of the current part. */
  attempts: number;
  /** The part of a long answer being written: 1, then 2, 3, ... for each hop that goes on. */
  part: number;
  endedAt?: number;
  rows: TimelineRow[];
  /** The answer, or the text so far while it streams, or the text a failed stream had delivered. */
  answer?: string;
  /** True once the first piece of the answer arrived (nothing is retried after it). */
  streaming: boolean;
  /** True when the answer is the part a failed call had written. */
  partial: boolean;
  requestId?: string;
  /** What the answer cost and where the time went, as the demo page's details show it. */
  details?: string;
  error?: ErrorView;
}

export const idle: AskView = { phase: 'idle', startedAt: 0, lastEventAt: 0, lastWaitMs: 0, attempts: 0, part: 1, rows: [], streaming: false, partial: false };

/** A duration as the demo page writes it: 850 ms, 2.35 s, 31.4 s. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  return `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
}

/** Replaces {0}, {1}... in a localized string. */
export function format(template: string, ...values: string[]): string {
  return template.replace(/\{(\d+)\}/g, (m, i: string) => (values[Number(i)] !== undefined ? values[Number(i)] : m));
}

/** A call has started. */
export function started(now: number): AskView {
  return { ...idle, phase: 'running', startedAt: now, lastEventAt: now };
}

/** The client reported an attempt (its onAttempt hook), the one the caller cancelled included. */
export function attempted(v: AskView, e: AttemptEvent, now: number): AskView {
  const cancelled = e.decision === 'cancelled';
  const decision = e.decision === 'success' ? 'success' : cancelled ? strings.Cancelled : e.retry ? 'retry' : `stop: ${e.decision}`;
  const row: TimelineRow = {
    attempt: e.attempt,
    part: e.hop,
    status: e.status === 0 ? (cancelled ? '' : strings.NetworkError) : String(e.status),
    elapsed: duration(e.elapsedMs),
    decision,
    // A wait is shown when it will be waited, and when it was too long to wait (the user waits it instead).
    wait: e.retry || e.decision === 'wait_too_long' ? duration(e.waitMs) : '',
    code: e.code ?? '',
    kind: e.decision === 'success' ? 'success' : cancelled ? 'cancelled' : e.retry ? 'retry' : 'stop',
  };
  return { ...v, rows: [...v.rows, row], attempts: e.attempt, lastEventAt: now, lastWaitMs: e.retry ? e.waitMs : 0 };
}

/** A long answer goes on in its next hop (onHop): its attempts count from 1 again. */
export function hopped(v: AskView, hop: number, now: number): AskView {
  return v.phase === 'running' ? { ...v, part: hop, attempts: 0, lastEventAt: now, lastWaitMs: 0 } : v;
}

/** "still writing, part 2" while a long answer runs past its first hop; undefined otherwise. */
export function partLine(v: AskView): string | undefined {
  return v.phase === 'running' && v.part > 1 ? format(strings.StillWriting, String(v.part)) : undefined;
}

/** The timeline's first cell: the attempt, and the part of a long answer it was of. */
export function attemptLabel(r: TimelineRow): string {
  return r.part ? format(strings.AttemptOfPart, String(r.attempt), String(r.part)) : String(r.attempt);
}

/** A piece of the answer arrived (onDelta): the text so far replaces what was shown. */
export function streamed(v: AskView, answerSoFar: string): AskView {
  return v.phase === 'running' ? { ...v, streaming: true, answer: answerSoFar } : v;
}

/** The call resolved with an answer. */
export function answered(v: AskView, r: ChatResponse, now: number): AskView {
  return { ...v, phase: 'answered', endedAt: now, answer: r.answer, partial: false, requestId: r.requestId, details: answerDetails(r) };
}

/** "finish stop, 12 tokens (9 prompt + 3 completion), 1 upstream attempt, server 12 ms", plus what was cut to fit. */
export function answerDetails(r: ChatResponse): string {
  const u = r.usage;
  const parts = [
    format(strings.DetailsFinish, r.finishReason),
    format(strings.DetailsTokens, String(u.totalTokens), String(u.promptTokens), String(u.completionTokens)),
    format(r.upstreamAttempts === 1 ? strings.DetailsUpstreamOne : strings.DetailsUpstream, String(r.upstreamAttempts)),
    format(strings.DetailsServer, duration(r.elapsedMs)),
  ];
  if (r.truncated) parts.push(strings.DetailsTruncated);
  return parts.join(', ');
}

/** The call rejected: a TimeboxError (the readable kind), the caller's own cancel, or anything else. */
export function failed(v: AskView, err: unknown, now: number, cancelled: boolean): AskView {
  if (cancelled) {
    const last = v.rows[v.rows.length - 1];
    // The client reports the attempt it cancelled; a cancel during the wait
    // before an attempt (or before the first was sent) gets its row here.
    const rows: TimelineRow[] =
      last && last.kind === 'cancelled'
        ? v.rows
        : [...v.rows, { attempt: v.attempts + 1, part: v.part > 1 ? v.part : undefined, status: '', elapsed: '', decision: strings.CancelledBeforeSent, wait: '', code: '', kind: 'cancelled' }];
    // Text that had streamed stays, marked as incomplete.
    return { ...v, phase: 'cancelled', endedAt: now, rows, partial: !!v.answer, error: { message: strings.CancelledMessage } };
  }
  // What the model had written before the call failed (a stream cut off, or the budget's partial answer) stays on screen.
  const partial = err instanceof TimeboxError && err.partial && err.partial.answer ? err.partial.answer : undefined;
  const answer = partial !== undefined ? partial : v.answer;
  return { ...v, phase: 'failed', endedAt: now, answer, partial: !!answer, error: errorView(err) };
}

/** The readable error for anything a call can reject with. */
export function errorView(err: unknown): ErrorView {
  if (err instanceof TimeboxError) {
    // The message is already the readable one, with its "Try again in N s"
    // when a wait was asked for (the client's rule, or the server's words).
    return { message: err.message, requestId: err.requestId, code: err.code };
  }
  return { message: err instanceof Error && err.message ? err.message : String(err) };
}

/** The status line, with the running counter while a call is in flight. */
export function statusLine(v: AskView, now: number): string {
  const total = duration((v.endedAt ?? now) - v.startedAt);
  switch (v.phase) {
    case 'idle':
      return strings.StateIdle;
    case 'running': {
      const waitEnds = v.lastEventAt + v.lastWaitMs;
      // Only an announced wait is counted down: a clock read before the last event is not one.
      if (v.lastWaitMs > 0 && now < waitEnds) return format(strings.StateWaiting, String(v.attempts + 1), duration(waitEnds - now), total);
      if (v.streaming) return format(strings.StateStreaming, String(v.attempts + 1), duration(now - waitEnds), total);
      return format(strings.StateRunning, String(v.attempts + 1), duration(now - waitEnds), total);
    }
    case 'answered':
      return format(strings.StateAnswered, total);
    case 'failed':
      return format(strings.StateFailed, total);
    case 'cancelled':
      return format(strings.StateCancelled, total);
  }
}

const grouped = new Intl.NumberFormat('en-US');

/**
 * The line in place of the usage when it could not be read: a quota store that is down (503 quota_unavailable,
 * which QUOTA_FAIL_OPEN answers too) says so; any other failure hides the line (undefined).
 */
export function usageFailedText(err: unknown): string | undefined {
  return err instanceof TimeboxError && err.code === 'quota_unavailable' ? strings.UsageUnavailable : undefined;
}

/**
 * "12,340 of 200,000 tokens used today" (the user's day, else the tenant's month); undefined without a limit. Tokens
 * held by answers under way are said apart (", 1,499 held by answers under way"): a question can be refused for them
 * before the limit is used.
 */
export function usageText(u: Usage): string | undefined {
  const day = u.user?.day;
  if (day) return withHeld(format(strings.UsageToday, grouped.format(day.used), grouped.format(day.limit)), day.reserved);
  const month = u.tenant?.month;
  if (month) return withHeld(format(strings.UsageThisMonth, grouped.format(month.used), grouped.format(month.limit)), month.reserved);
  return undefined;
}

function withHeld(line: string, reserved: number): string {
  return reserved > 0 ? format(strings.UsageHeld, line, grouped.format(reserved)) : line;
}
