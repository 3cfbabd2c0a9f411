/**
 * The fast-failure retry rule, the same rule as the Go package
 * `internal/retry` and checked against the same test vectors
 * (`internal/retry/testdata/vectors.json`).
 *
 * A gateway status (502/503/504), a 429 or a network error that came back
 * quickly is a hiccup worth another attempt; the same status after a long
 * wait is a timeout, and retrying it multiplies both the wait and the bill.
 */

/** Why {@link decide} decided what it did. Stable strings, shared with Go. */
export type Reason =
  | 'retry' // fast, retryable, and the wait fits
  | 'not_retryable' // a status no retry can fix (success included)
  | 'should_not_retry' // the server sent x-should-retry: false
  | 'slow_failure' // the attempt took at least fastFailureMs: a timeout
  | 'last_attempt' // no attempts left
  | 'wait_too_long'; // the wait exceeds maxWaitMs or the time left

/** Defaults of the rule, the same as Go's `retry.Default*`. */
export const DEFAULTS = Object.freeze({
  maxAttempts: 3,
  fastFailureMs: 30_000,
  maxWaitMs: 30_000,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  statuses: Object.freeze([429, 502, 503, 504]) as readonly number[],
});

/**
 * The rule's parameters. Every field is optional; a missing (or zero) field
 * takes the default from {@link DEFAULTS}.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. Default 3. */
  maxAttempts?: number;
  /** A failed attempt that took at least this long is a timeout, never retried. Default 30 000 ms. */
  fastFailureMs?: number;
  /** Cap on a server-requested wait (Retry-After). Default 30 000 ms. */
  maxWaitMs?: number;
  /** Backoff when the server names no wait: baseDelayMs doubled per attempt, capped at maxDelayMs, upper half jittered. Defaults 500 and 8 000 ms. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Statuses worth retrying. Default 429, 502, 503, 504. Network errors (status 0) are always retryable. */
  statuses?: readonly number[];
  /** Returns a number in [0, 1) for jitter. Default Math.random. */
  random?: () => number;
}

/** Anything with a case-insensitive `get`, such as `Headers` or SPFx's response headers. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** One failed attempt, as {@link decide} sees it. */
export interface FailedAttempt {
  /** The attempt's 1-based position. */
  attempt: number;
  /** How long the attempt took, from sending to the answer or the error, in ms. */
  elapsedMs: number;
  /** The HTTP status, or 0 for a network error. */
  status: number;
  /** The response's headers; null or missing for a network error. */
  headers?: HeaderReader | null;
  /** Time left before the caller's overall deadline, in ms; Infinity (or missing) when there is none. */
  remainingMs?: number;
  /** Clock reading (Unix ms) when the answer arrived, used only for a Retry-After HTTP date. Default Date.now(). */
  nowMs?: number;
}

/** What to do after a failed attempt. */
export interface Decision {
  /** True when another attempt should be made after waitMs. */
  retry: boolean;
  /** The pause before the next attempt; with reason 'wait_too_long' it is the wait that did not fit. */
  waitMs: number;
  reason: Reason;
  /** True when the attempt was judged a timeout (a slow failure). */
  timeout: boolean;
}

function or(v: number | undefined, def: number): number {
  return v === undefined || v === 0 ? def : v;
}

/**
 * Applies the rule to a failed attempt. Checks run in the same order as in
 * Go: a status not worth retrying, x-should-retry: false, a slow attempt, the
 * last attempt, then the wait (server-requested or backoff) against maxWaitMs
 * and the time left.
 */
export function decide(policy: RetryPolicy, a: FailedAttempt): Decision {
  const no = (reason: Reason, timeout = false): Decision => ({ retry: false, waitMs: 0, reason, timeout });
  if (!retryable(policy, a.status)) return no('not_retryable');
  const shouldRetry = a.headers?.get('x-should-retry');
  if (shouldRetry != null && shouldRetry.trim().toLowerCase() === 'false') return no('should_not_retry');
  if (a.elapsedMs >= or(policy.fastFailureMs, DEFAULTS.fastFailureMs)) return no('slow_failure', true);
  if (a.attempt >= or(policy.maxAttempts, DEFAULTS.maxAttempts)) return no('last_attempt');
  const asked = serverWaitMs(a.headers, a.nowMs);
  const waitMs = asked ?? backoffMs(policy, a.attempt);
  const remaining = a.remainingMs ?? Infinity;
  if ((asked !== undefined && waitMs > or(policy.maxWaitMs, DEFAULTS.maxWaitMs)) || waitMs >= remaining) {
    return { retry: false, waitMs, reason: 'wait_too_long', timeout: false };
  }
  return { retry: true, waitMs, reason: 'retry', timeout: false };
}

function retryable(policy: RetryPolicy, status: number): boolean {
  return status === 0 || (policy.statuses ?? DEFAULTS.statuses).includes(status);
}

/**
 * The wait before attempt n+1 when the server named none: baseDelayMs·2^(n-1)
 * capped at maxDelayMs, the upper half jittered ("equal jitter"), so waits
 * stay within [d/2, d).
 */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const base = or(policy.baseDelayMs, DEFAULTS.baseDelayMs);
  const cap = or(policy.maxDelayMs, DEFAULTS.maxDelayMs);
  const d = Math.min(base * 2 ** Math.max(attempt - 1, 0), cap);
  const r = (policy.random ?? Math.random)();
  // Truncated to whole nanoseconds, as Go's time.Duration is, so a random
  // number just under 1 cannot round up to d.
  return d / 2 + Math.floor(r * (d / 2) * 1e6) / 1e6;
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Parses a plain decimal number the way Go's retry.parseDecimal does. */
function parseDecimal(v: string | null | undefined): number | undefined {
  if (v == null) return undefined;
  const s = v.trim();
  if (!DECIMAL.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Reads the wait a response asks for, in ms: `retry-after-ms` (Azure OpenAI,
 * may be fractional) first, then `Retry-After` in seconds or as an HTTP date
 * relative to nowMs (default Date.now()). Undefined when neither is present
 * and valid. Negative waits count as zero.
 */
export function serverWaitMs(headers: HeaderReader | null | undefined, nowMs?: number): number | undefined {
  if (!headers) return undefined;
  const ms = parseDecimal(headers.get('retry-after-ms'));
  if (ms !== undefined) return Math.max(ms, 0);
  const v = headers.get('retry-after')?.trim();
  if (!v) return undefined;
  const s = parseDecimal(v);
  if (s !== undefined) return Math.max(s * 1000, 0);
  const t = parseHttpDate(v);
  if (t !== undefined) return Math.max(t - (nowMs ?? Date.now()), 0);
  return undefined;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = '(mon|tue|wed|thu|fri|sat|sun)';
const LONG_DAYS = '(monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const MON = '([a-z]{3})';
const TIME = '(\\d{1,2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^${DAYS}, (\\d{2}) ${MON} (\\d{4}) ${TIME} GMT$`, 'i');
const RFC850 = new RegExp(`^${LONG_DAYS}, (\\d{2})-${MON}-(\\d{2}) ${TIME} GMT$`, 'i');
const ASCTIME = new RegExp(`^${DAYS} ${MON}  ?(\\d{1,2}) ${TIME} (\\d{4})$`, 'i');

/**
 * Parses an HTTP date (RFC 9110 section 5.6.7) in the three formats Go's
 * http.ParseTime accepts, returning Unix ms, or undefined. Date.parse is not
 * used: it reads asctime dates in local time and accepts much more.
 */
export function parseHttpDate(v: string): number | undefined {
  let m: RegExpExecArray | null;
  let day: string, mon: string, year: number, hh: string, mm: string, ss: string;
  if ((m = IMF_FIXDATE.exec(v))) {
    [, , day, mon, , hh, mm, ss] = m as unknown as string[];
    year = Number(m[4]);
  } else if ((m = RFC850.exec(v))) {
    [, , day, mon, , hh, mm, ss] = m as unknown as string[];
    const yy = Number(m[4]);
    year = yy >= 69 ? 1900 + yy : 2000 + yy;
  } else if ((m = ASCTIME.exec(v))) {
    [, , mon, day, hh, mm, ss] = m as unknown as string[];
    year = Number(m[7]);
  } else {
    return undefined;
  }
  const month = MONTHS.indexOf(mon.toLowerCase());
  const [d, h, mi, s] = [Number(day), Number(hh), Number(mm), Number(ss)];
  if (month < 0 || h > 23 || mi > 59 || s > 59) return undefined;
  const t = Date.UTC(year, month, d, h, mi, s);
  // Reject days the month does not have (Go does too).
  if (new Date(t).getUTCDate() !== d) return undefined;
  return t;
}
