import { decide, serverWaitMs, type Decision, type HeaderReader, type Reason, type RetryPolicy } from './rule.js';
import { raceAbort } from './abort.js';
import { CallbackError, FailedBeforeFirstPiece, HopEnd, readChatStream, StreamFailure, type DeltaHandler } from './stream.js';
import type { Usage } from './usage.js';

/** The response shape the client needs: the browser's Response and SPFx's HttpClientResponse both match it. */
export interface ResponseLike {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: HeaderReader;
  /** The body as a byte stream (fetch's Response has it); without it a stream is read whole, at the end. */
  readonly body?: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
}

/** One HTTP request, as the client hands it to a {@link Transport}. */
export interface TransportRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** Set on a cancel sent as a page unloads (`fetch(..., { keepalive: true })`), so it outlives the page. */
  keepalive?: boolean;
}

/**
 * Sends one request. It resolves with the response whatever its status and
 * rejects only on a network error or an abort, as `fetch` and SPFx's
 * clients do.
 */
export type Transport = (url: string, request: TransportRequest) => Promise<ResponseLike>;

/** The part of `window.fetch` the client uses. */
export type FetchLike = (url: string, init: TransportRequest) => Promise<ResponseLike>;

/** Uses the browser's (or Node's) `fetch`, looked up when the request is sent unless one is given. */
export function fetchTransport(fetchImpl?: FetchLike): Transport {
  return (url, request) => (fetchImpl ?? (globalThis.fetch as unknown as FetchLike))(url, request);
}

/**
 * The structural shape of SPFx's `HttpClient` and `AadHttpClient`
 * (`@microsoft/sp-http`): `post(url, configuration, options)` and
 * `get(url, configuration, options)`, resolving with a response whose `ok` is
 * false on error statuses. Nothing is imported from SPFx at run time.
 */
export interface SpfxHttpClientLike {
  post(url: string, configuration: unknown, options: SpfxRequestOptions): Promise<ResponseLike>;
  get?(url: string, configuration: unknown, options: SpfxRequestOptions): Promise<ResponseLike>;
}

/** The subset of SPFx's `IHttpClientOptions` (a `RequestInit`) the client sets. */
export interface SpfxRequestOptions {
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** A cancel sent as the page goes away: AadHttpClient hands its options to fetch, which lets the request outlive the page. */
  keepalive?: boolean;
}

/**
 * Adapts an SPFx `HttpClient` or `AadHttpClient` to a {@link Transport}.
 * `configuration` is the client's `configurations.v1`
 * (`AadHttpClient.configurations.v1`). The client also races every attempt
 * against its own timeout, so an attempt ends on time even if a transport
 * ignored `signal`.
 */
export function spfxTransport(client: SpfxHttpClientLike, configuration: unknown): Transport {
  return (url, { method, headers, body, signal, keepalive }) => {
    const options: SpfxRequestOptions = body === undefined ? { headers, signal } : { headers, body, signal };
    if (keepalive) options.keepalive = true;
    if (method === 'GET' && client.get) return client.get(url, configuration, options);
    return client.post(url, configuration, options);
  };
}

/** Time, injectable for tests. `now` is in ms; the timer returns its own cancel function. */
export interface Clock {
  now(): number;
  setTimer(ms: number, fn: () => void): () => void;
}

/** The real clock: Date.now and setTimeout. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const id = setTimeout(fn, ms);
    return () => clearTimeout(id);
  },
};

/** What the `onAttempt` hook hears after every attempt, for telemetry and UI. */
export interface AttemptEvent {
  /** 1-based attempt number. */
  attempt: number;
  /** HTTP status, or 0 for a network error or an attempt timeout (a stream that had started keeps its 200; an `error` event before its first piece gives the status it carries). */
  status: number;
  /** How long the attempt took, in ms. */
  elapsedMs: number;
  /**
   * 'success' for a 2xx (for a stream: its `done`), 'cancelled' when the
   * caller's signal ended the attempt, 'stream_failed' when a stream that had
   * started ended otherwise (never retried), else the rule's reason.
   */
  decision: 'success' | 'cancelled' | 'stream_failed' | Reason;
  /** True when another attempt follows. */
  retry: boolean;
  /** The pause before the next attempt (or the wait that did not fit), in ms. */
  waitMs: number;
  /** True when the attempt was judged a timeout. */
  timeout: boolean;
  /** The server's x-request-id, when it answered. */
  requestId?: string;
  /** The server's error code, when it sent one. */
  code?: string;
  /** A long answer's hop this attempt was of: 2 for the first continue, and so on; absent for the first. */
  hop?: number;
}

/** Options of a {@link TimeboxClient}; every per-call option can be overridden in {@link CallOptions}. */
export interface TimeboxClientOptions {
  /** The Function App's base URL, e.g. `https://contoso-timebox.azurewebsites.net`. Routes are under `/api`. */
  baseUrl: string;
  /** How requests are sent. Default: {@link fetchTransport} with the global fetch. */
  transport?: Transport;
  /** Headers sent on every request, e.g. `{ 'x-functions-key': key }`. */
  headers?: Record<string, string>;
  /** The retry rule's parameters (defaults: 3 attempts, 30 s threshold, 30 s wait cap). */
  policy?: RetryPolicy;
  /** Each attempt's own timeout, sent as `x-client-timeout-ms`. Default 230 000 ms (the platform's limit). */
  attemptTimeoutMs?: number;
  /** Overall deadline for a call, all attempts and waits included, in ms. Default: none. */
  deadlineMs?: number;
  /** Called after every attempt. Exceptions it throws are ignored. */
  onAttempt?: (event: AttemptEvent) => void;
  /** Injected time, for tests. Default {@link systemClock}. */
  clock?: Clock;
}

/** Per-call options. */
export interface CallOptions {
  /** Cancels the attempt in flight and any backoff at once; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  headers?: Record<string, string>;
  attemptTimeoutMs?: number;
  deadlineMs?: number;
  onAttempt?: (event: AttemptEvent) => void;
  /**
   * Hears each hop of a long answer after the first (2, 3, ...) with the
   * cursor it goes on with: what a web part keeps to {@link TimeboxClient.cancel}
   * the answer when its page unloads. `deadlineMs` bounds all hops together.
   */
  onHop?: (hop: number, cursor: string) => void;
}

/** Options of {@link TimeboxClient.chatStream}. */
export interface StreamCallOptions extends CallOptions {
  /**
   * Hears each piece of the answer as it arrives, with the whole text so far.
   * An exception it throws ends the stream, and the call rejects with it.
   */
  onDelta?: DeltaHandler;
}

/** What {@link TimeboxClient.chatEvents} yields: the pieces, then the whole answer. */
export type ChatStreamEvent = { type: 'delta'; text: string } | { type: 'done'; response: ChatResponse };

/** A chat message; the system prompt is the server's. */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** The body of `POST /api/chat` (docs/api.md). */
export interface ChatRequest {
  messages: ChatMessage[];
  sources?: { title?: string; url?: string; text: string }[];
  documents?: { name: string; contentType: string; data: string }[];
  urls?: string[];
  maxTokens?: number;
}

/** A 200 from `POST /api/chat`. */
export interface ChatResponse {
  answer: string;
  /** 'stop', 'length' or 'content_filter'. */
  finishReason: string;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  requestId: string;
  /** The server's own time for the request, in ms. */
  elapsedMs: number;
  /** Upstream calls the server made (it retries a throttle itself when the wait fits its budget). */
  upstreamAttempts: number;
  /** True when material was cut to fit the context window; `dropped` says what. */
  truncated: boolean;
  dropped?: { turns?: number; sources?: string[]; shortened?: string[] };
}

/** What {@link TimeboxError} carries besides its message. */
export interface TimeboxErrorDetails {
  status: number;
  code: string;
  serverMessage?: string;
  requestId?: string;
  attempts: number;
  elapsedMs: number;
  retryAfterMs?: number;
  timeout: boolean;
  reason: Reason | 'invalid_response' | 'stream_failed';
  partial?: PartialAnswer;
}

/** The text the model had written when the call failed (the budget ran out, or a stream broke). */
export interface PartialAnswer {
  answer: string;
  /** Tokens in `answer`, when the server counted them (the JSON 500 does; a stream's `error` event does not). */
  completionTokens?: number;
}

/**
 * The readable error a call rejects with when it gives up: `message` is fit
 * for an end user; the fields say what happened.
 */
export class TimeboxError extends Error implements TimeboxErrorDetails {
  /** The last HTTP status (for an `error` event before a stream's first piece, the status it carries), or 0 for a network error or an attempt timeout. */
  readonly status: number;
  /** The server's stable error code, or 'network_error', 'attempt_timeout', 'invalid_response'. */
  readonly code: string;
  /** The server's own message, when it sent one. */
  readonly serverMessage?: string;
  /** The server's request id (body or x-request-id), when it answered. */
  readonly requestId?: string;
  /** Attempts made. */
  readonly attempts: number;
  /** Time spent on the whole call, waits included, in ms. */
  readonly elapsedMs: number;
  /** The wait the server asked for (Retry-After / retry-after-ms), in ms. */
  readonly retryAfterMs?: number;
  /** True when the call ended in a timeout: a slow failure, the server's deadline_exceeded, or an attempt timeout. */
  readonly timeout: boolean;
  /** The rule's reason for stopping; 'stream_failed' when a stream that had started ended without its answer. */
  readonly reason: Reason | 'invalid_response' | 'stream_failed';
  /** The answer as far as it got, when the server had text when it gave up (or a stream had delivered some). */
  readonly partial?: PartialAnswer;

  constructor(message: string, d: TimeboxErrorDetails) {
    super(message);
    this.name = 'TimeboxError';
    this.status = d.status;
    this.code = d.code;
    this.serverMessage = d.serverMessage;
    this.requestId = d.requestId;
    this.attempts = d.attempts;
    this.elapsedMs = d.elapsedMs;
    this.retryAfterMs = d.retryAfterMs;
    this.timeout = d.timeout;
    this.reason = d.reason;
    if (d.partial) this.partial = d.partial;
  }
}

const DEFAULT_ATTEMPT_TIMEOUT_MS = 230_000;

/**
 * Reads the body of a 2xx. It rejects with a {@link StreamFailure} when the
 * answer had started and cannot be completed (never retried), and with any
 * other error when nothing was delivered (judged as a network error).
 */
type OkReader<T> = (response: ResponseLike, signal: AbortSignal) => Promise<T>;

/** Calls a timebox Function App, retrying only fast failures. */
export class TimeboxClient {
  private readonly options: TimeboxClientOptions;

  constructor(options: TimeboxClientOptions) {
    this.options = { ...options, baseUrl: options.baseUrl.replace(/\/+$/, '') };
  }

  /**
   * Asks `POST /api/chat`; rejects with a {@link TimeboxError} (or the signal's reason when aborted).
   * A long answer's `202` is followed with `POST /api/chat/continue` until the whole answer comes.
   */
  async chat(request: ChatRequest, options: CallOptions = {}): Promise<ChatResponse> {
    const hops = this.hops(options);
    let r = await this.send<ChatResponse | InProgress>('POST', '/api/chat', request, hops.options(1));
    for (let hop = 2; isInProgress(r); hop++) {
      r = await hops.next(hop, r.cursor, (o) => this.send<ChatResponse | InProgress>('POST', '/api/chat/continue', { cursor: (r as InProgress).cursor }, o));
    }
    return r;
  }

  /**
   * Cancels a long answer by the cursor of its last hop (`POST /api/chat/cancel`):
   * its generation stops at Azure OpenAI. With `keepalive` the request outlives
   * the page (`fetch(..., { keepalive: true })`), for a web part's unload. One
   * attempt, whatever its outcome: it resolves either way.
   */
  async cancel(cursor: string, options: { keepalive?: boolean; headers?: Record<string, string> } = {}): Promise<void> {
    const o = this.options;
    const transport = o.transport ?? fetchTransport();
    const headers = { accept: 'application/json', 'content-type': 'application/json', ...o.headers, ...options.headers };
    const request: TransportRequest = { method: 'POST', headers, body: JSON.stringify({ cursor }), signal: new AbortController().signal };
    if (options.keepalive) request.keepalive = true;
    try {
      await transport(o.baseUrl + '/api/chat/cancel', request);
    } catch {
      // Best effort: the answer ends at LONG_ANSWER_LIMIT anyway.
    }
  }

  /**
   * What the hops of one long answer share: the caller's deadline over all of
   * them, its onHop, and a cancel of the answer by its last cursor when its
   * signal ends it after the first hop, between hops or during one (the
   * first hop has no cursor: its connection's end cancels it).
   */
  private hops(options: CallOptions) {
    const clock = this.options.clock ?? systemClock;
    const start = clock.now();
    const total = options.deadlineMs ?? this.options.deadlineMs;
    const withHop = (hop: number): HopOptions => ({
      ...options,
      deadlineMs: total === undefined ? undefined : Math.max(1, total - (clock.now() - start)),
      hop: hop === 1 ? undefined : hop,
    });
    return {
      options: withHop,
      next: async <T>(hop: number, cursor: string, run: (o: CallOptions) => Promise<T>): Promise<T> => {
        try {
          options.onHop?.(hop, cursor);
        } catch {
          // A UI hook must not change the call's outcome.
        }
        try {
          options.signal?.throwIfAborted();
          return await run(withHop(hop));
        } catch (err) {
          // keepalive: the abort may be the page going away (a web part disposed as it unloads).
          if (options.signal?.aborted) void this.cancel(cursor, { keepalive: true });
          throw err;
        }
      },
    };
  }

  /**
   * Asks `POST /api/chat` for a stream (`Accept: text/event-stream`):
   * `onDelta` hears the answer as it is written, and the call resolves with
   * the same object as {@link chat} once the server sends `done`.
   *
   * Until the first piece arrives the rule is {@link chat}'s: a fast failure
   * is retried, whether it comes as a status or, after a keep-alive, as an
   * `error` event with `"partial": false` (judged by its status and hints,
   * timed to the event). After it nothing is retried (the text would repeat): the call
   * rejects with a {@link TimeboxError} whose `partial.answer` holds the text
   * so far and whose `reason` is 'stream_failed'. The caller's signal ends
   * the stream and the connection, so the server cancels the upstream call.
   * A server or proxy that answers plain JSON instead is read as one piece.
   */
  async chatStream(request: ChatRequest, options: StreamCallOptions = {}): Promise<ChatResponse> {
    // A long answer's hops make one text: onDelta hears the whole answer so far.
    let soFar = '';
    const onDelta: DeltaHandler | undefined = options.onDelta && ((piece) => {
      soFar += piece;
      options.onDelta?.(piece, soFar);
    });
    const once = (path: string, body: unknown, o: CallOptions) =>
      this.call<ChatResponse | HopEnd>('POST', path, body, o, 'text/event-stream', (response, signal) => {
        if (isEventStream(response)) return readChatStream<ChatResponse>(response, onDelta, signal);
        return readJson<ChatResponse>(response, signal).then((r) => {
          try {
            if (typeof r.answer === 'string' && r.answer !== '') onDelta?.(r.answer, r.answer);
          } catch (err) {
            throw new CallbackError(err);
          }
          return r;
        });
      });
    const hops = this.hops(options);
    let r = await once('/api/chat', request, hops.options(1));
    for (let hop = 2; r instanceof HopEnd; hop++) {
      const cursor = r.cursor;
      r = await hops.next(hop, cursor, (o) => once('/api/chat/continue', { cursor }, o));
    }
    return r;
  }

  /**
   * The async-iterable form of {@link chatStream}: yields `{ type: 'delta',
   * text }` for every piece, then `{ type: 'done', response }`, and throws
   * what chatStream rejects with. Leaving the loop early (`break`, `return`,
   * an exception) cancels the stream and the upstream call.
   */
  async *chatEvents(request: ChatRequest, options: CallOptions = {}): AsyncGenerator<ChatStreamEvent, void, undefined> {
    const inner = new AbortController();
    const outer = options.signal;
    const onOuterAbort = () => inner.abort(outer?.reason);
    if (outer?.aborted) onOuterAbort();
    else outer?.addEventListener('abort', onOuterAbort, { once: true });
    const queue: ChatStreamEvent[] = [];
    let wake: (() => void) | undefined;
    let end: { error?: unknown } | undefined;
    const push = (e: ChatStreamEvent) => {
      queue.push(e);
      wake?.();
    };
    this.chatStream(request, { ...options, signal: inner.signal, onDelta: (text) => push({ type: 'delta', text }) }).then(
      (response) => {
        end = {};
        push({ type: 'done', response });
      },
      (error: unknown) => {
        end = { error };
        wake?.();
      },
    );
    try {
      for (;;) {
        const next = queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (end) {
          if ('error' in end) throw end.error;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      outer?.removeEventListener('abort', onOuterAbort);
      if (!end) inner.abort(new DOMException('The reader left the stream.', 'AbortError'));
    }
  }

  /**
   * Reads `GET /api/usage`: the caller's tokens used of its quotas, and when
   * each window resets ({@link usageLine} says it in a line). A quota store
   * that is down rejects with code `quota_unavailable` (with the server's
   * `QUOTA_FAIL_OPEN` too), after the rule's retries: a page that reads it
   * beside an answer passes a `deadlineMs` under the 503's 5 s wait, so it
   * is not waited for.
   */
  usage(options: CallOptions = {}): Promise<Usage> {
    return this.send<Usage>('GET', '/api/usage', undefined, options);
  }

  /** Reads `GET /api/health`. */
  health(options: CallOptions = {}): Promise<{ status: string; version?: string }> {
    return this.send('GET', '/api/health', undefined, options);
  }

  /** Sends one logical request with the rule and returns the parsed JSON of the first 2xx. */
  send<T>(method: 'GET' | 'POST', path: string, body: unknown, options: CallOptions = {}): Promise<T> {
    return this.call<T>(method, path, body, options, 'application/json', readJson);
  }

  /** The attempt loop: every request, JSON or stream, goes through the same rule. */
  private async call<T>(method: 'GET' | 'POST', path: string, body: unknown, options: HopOptions, accept: string, readOk: OkReader<T>): Promise<T> {
    const o = this.options;
    const clock = o.clock ?? systemClock;
    const transport = o.transport ?? fetchTransport();
    const policy = o.policy ?? {};
    const signal = options.signal;
    const attemptTimeoutMs = options.attemptTimeoutMs ?? o.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    const deadlineMs = options.deadlineMs ?? o.deadlineMs;
    const start = clock.now();
    const deadline = deadlineMs === undefined ? Infinity : start + deadlineMs;
    const notify = (e: AttemptEvent) => {
      if (options.hop !== undefined) e = { ...e, hop: options.hop };
      for (const hook of [o.onAttempt, options.onAttempt]) {
        try {
          hook?.(e);
        } catch {
          // A telemetry hook must not change the call's outcome.
        }
      }
    };
    const payload = body === undefined ? undefined : JSON.stringify(body);

    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      // The attempt may use no more than the time left, and tells the server
      // so: the server answers before x-client-timeout-ms runs out.
      const timeoutMs = Math.max(1, Math.floor(Math.min(attemptTimeoutMs, deadline - clock.now())));
      const headers: Record<string, string> = {
        accept,
        ...o.headers,
        ...options.headers,
        'x-client-timeout-ms': String(timeoutMs),
      };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      const attemptAbort = new AbortController();
      let timedOut = false;
      const cancelTimer = clock.setTimer(timeoutMs, () => {
        timedOut = true;
        attemptAbort.abort(new DOMException('attempt timed out', 'TimeoutError'));
      });
      const onCallerAbort = () => attemptAbort.abort(signal?.reason);
      signal?.addEventListener('abort', onCallerAbort, { once: true });

      const t0 = clock.now();
      let response: ResponseLike | undefined;
      let text = '';
      let result: { value: T } | undefined;
      let failure: StreamFailure | undefined;
      let early: FailedBeforeFirstPiece | undefined;
      try {
        response = await raceAbort(transport(o.baseUrl + path, { method, headers, body: payload, signal: attemptAbort.signal }), attemptAbort.signal);
        // The reader honours the signal itself: once part of a stream was
        // delivered it must turn an abort into a StreamFailure, not a retry.
        if (response.ok) result = { value: await readOk(response, attemptAbort.signal) };
        else text = await raceAbort(response.text(), attemptAbort.signal);
      } catch (err) {
        // The caller ended the attempt: its signal, or an exception from its own onDelta.
        if (signal?.aborted || err instanceof CallbackError) {
          attemptAbort.abort(err);
          notify({ attempt, status: response?.status ?? 0, elapsedMs: clock.now() - t0, decision: 'cancelled', retry: false, waitMs: 0, timeout: false, requestId: response?.headers.get('x-request-id') ?? undefined });
          throw err instanceof CallbackError ? err.error : signal?.reason;
        }
        if (err instanceof StreamFailure) failure = err;
        // An error event before the first piece: judged below as the JSON
        // answer it stands for.
        else if (err instanceof FailedBeforeFirstPiece) early = err;
        // A network error (before or during the body, before any of the answer
        // was delivered) or the attempt's own timeout: both count as status 0
        // for the rule.
        else response = undefined;
      } finally {
        cancelTimer();
        signal?.removeEventListener('abort', onCallerAbort);
      }
      const now = clock.now();
      const elapsedMs = now - t0;
      const status = early?.status ?? response?.status ?? 0;

      if (result) {
        const requestId = str((result.value as { requestId?: unknown } | undefined)?.requestId) ?? response?.headers.get('x-request-id') ?? undefined;
        notify({ attempt, status, elapsedMs, decision: 'success', retry: false, waitMs: 0, timeout: false, requestId });
        return result.value;
      }

      if (failure) {
        // The 2xx could not be read to its end. Once any of a stream had been
        // delivered nothing is retried: the text would be shown twice.
        const code = failure.code === 'stream_interrupted' && timedOut ? 'attempt_timeout' : failure.code;
        const details: TimeboxErrorDetails = {
          status,
          code,
          serverMessage: failure.serverMessage,
          requestId: failure.requestId,
          attempts: attempt,
          elapsedMs: now - start,
          timeout: timedOut || code === 'deadline_exceeded',
          reason: code === 'invalid_response' && failure.answer === '' ? 'invalid_response' : 'stream_failed',
        };
        if (failure.answer !== '') details.partial = { answer: failure.answer };
        notify({ attempt, status, elapsedMs, decision: details.reason === 'invalid_response' ? 'success' : 'stream_failed', retry: false, waitMs: 0, timeout: details.timeout, requestId: details.requestId, code });
        throw new TimeboxError(failureMessage(details, timeoutMs), details);
      }

      // The failed answer: the JSON error, or what an early error event stands for.
      const parsed = early ? early.body : parseJson(text);
      const failedHeaders = early?.headers ?? response?.headers;
      const requestId = str(parsed?.error?.requestId) ?? str(parsed?.requestId) ?? failedHeaders?.get('x-request-id') ?? undefined;
      const code = str(parsed?.error?.code);
      const decision = decide(policy, {
        attempt, elapsedMs, status, headers: failedHeaders ?? null, remainingMs: deadline - now, nowMs: now,
      });
      notify({ attempt, status, elapsedMs, decision: decision.reason, retry: decision.retry, waitMs: decision.waitMs, timeout: decision.timeout || timedOut, requestId, code });
      if (!decision.retry) {
        const retryAfterMs = serverWaitMs(failedHeaders, now);
        const details: TimeboxErrorDetails = {
          status,
          code: code ?? (response ? `http_${status}` : timedOut ? 'attempt_timeout' : 'network_error'),
          serverMessage: str(parsed?.error?.message),
          requestId,
          attempts: attempt,
          elapsedMs: now - start,
          retryAfterMs,
          timeout: decision.timeout || timedOut || code === 'deadline_exceeded',
          reason: decision.reason,
        };
        const partial = partialAnswer(parsed?.partial);
        if (partial) details.partial = partial;
        // timebox names the wait in retry-after-ms wherever its message says when.
        const serverSaysWhen = (failedHeaders?.get('retry-after-ms') ?? null) !== null;
        throw new TimeboxError(readable(details, decision, timeoutMs, serverSaysWhen), details);
      }
      await sleep(clock, decision.waitMs, signal);
    }
  }
}

/** A call's options within a long answer: the hop it is. */
type HopOptions = CallOptions & { hop?: number };

/** A long answer's `202`: the answer so far, and the cursor to continue with. */
interface InProgress {
  status: 'in_progress';
  cursor: string;
  partial?: { answer: string };
}

function isInProgress(r: unknown): r is InProgress {
  const v = r as Partial<InProgress> | undefined;
  return v?.status === 'in_progress' && typeof v.cursor === 'string' && v.cursor !== '';
}

/** Parses a 2xx's JSON body; a body that is not JSON is final ('invalid_response'). */
async function readJson<T>(response: ResponseLike, signal: AbortSignal): Promise<T> {
  const text = await raceAbort(response.text(), signal);
  const parsed = parseJson(text);
  if (parsed === undefined) throw new StreamFailure('invalid_response', undefined, response.headers.get('x-request-id') ?? undefined, '');
  return parsed as T;
}

function isEventStream(response: ResponseLike): boolean {
  return /^\s*text\/event-stream\s*(;|$)/i.test(response.headers.get('content-type') ?? '');
}

/** The JSON 500's `partial`: `{ answer, completionTokens }` when the model had written something. */
function partialAnswer(v: unknown): PartialAnswer | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { answer, completionTokens } = v as { answer?: unknown; completionTokens?: unknown };
  if (typeof answer !== 'string' || answer === '') return undefined;
  return typeof completionTokens === 'number' ? { answer, completionTokens } : { answer };
}

function failureMessage(d: TimeboxErrorDetails, timeoutMs: number): string {
  if (d.serverMessage) return d.serverMessage;
  if (d.code === 'invalid_response') return 'The service sent an answer that could not be read.';
  if (d.code === 'attempt_timeout') return `The service did not finish the answer within ${seconds(timeoutMs)} s.`;
  return 'The connection to the service was lost before the answer was complete.';
}

/** Creates a {@link TimeboxClient}. */
export function createClient(options: TimeboxClientOptions): TimeboxClient {
  return new TimeboxClient(options);
}

function readable(d: TimeboxErrorDetails, decision: Decision, timeoutMs: number, serverSaysWhen: boolean): string {
  let msg: string;
  if (d.serverMessage) msg = d.serverMessage;
  else if (d.status === 0 && d.code === 'attempt_timeout') msg = `The service did not answer within ${seconds(timeoutMs)} s.`;
  else if (d.status === 0) msg = 'The service could not be reached.';
  else msg = `The service answered with HTTP ${d.status}.`;
  // Say when to try again, once: timebox's message already says it when the
  // answer carries retry-after-ms.
  if (decision.reason === 'wait_too_long' && !(serverSaysWhen && d.serverMessage)) {
    msg = `${withStop(msg)} Try again in ${seconds(decision.waitMs)} s.`;
  } else if (decision.reason === 'slow_failure' && !d.serverMessage) {
    msg = `${withStop(msg)} It took ${seconds(d.elapsedMs)} s, so it was not retried.`;
  }
  return msg;
}

function withStop(s: string): string {
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function parseJson(text: string): any {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Waits ms on the clock, rejecting with the signal's reason at once when it aborts. */
function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
