/**
 * The chat stream as timebox sends it (docs/api.md, "Streaming"):
 * `event: delta` / `data: {"text":"..."}` per piece, ending with
 * `event: done` / `data:` the JSON 200's object, or `event: error` /
 * `data: {"error":{"code","message","requestId"},"partial":true}` (before
 * any delta: `"partial":false` with the JSON answer's `status`,
 * `shouldRetry` and `retryAfterMs`).
 * Comments (`: keep-alive`) and events of other names are skipped.
 */
import { readSse, SseDecoder, SseLimitError, type SseEvent } from './sse.js';
import { raceAbort } from './abort.js';
import type { ResponseLike } from './client.js';
import type { HeaderReader } from './rule.js';

/**
 * Why an answer that had started could not be completed. Thrown by
 * {@link readChatStream}; the client turns it into a TimeboxError that is
 * never retried (the text so far would be duplicated).
 */
export class StreamFailure extends Error {
  constructor(
    /** The server's code, or 'stream_interrupted' / 'invalid_response'. */
    readonly code: string,
    /** The server's own message, when it sent one. */
    readonly serverMessage: string | undefined,
    readonly requestId: string | undefined,
    /** The text received before the stream ended. */
    readonly answer: string,
  ) {
    super(serverMessage ?? code);
    this.name = 'StreamFailure';
  }
}

/**
 * An `error` event before the first piece (`"partial": false`): the attempt
 * failed before its first token, after a keep-alive had committed the 200.
 * It stands for the JSON answer the server would otherwise have sent, so the
 * client judges it by the same rule: `status`, `headers` (that answer's
 * `retry-after-ms` and `x-should-retry`, from the event's `retryAfterMs` and
 * `shouldRetry`) and `body` (its `{ error }`). Thrown by {@link readChatStream}.
 */
export class FailedBeforeFirstPiece extends Error {
  readonly headers: HeaderReader;

  constructor(
    readonly status: number,
    data: { retryAfterMs?: unknown; shouldRetry?: unknown },
    streamHeaders: HeaderReader,
    readonly body: { error?: unknown },
  ) {
    super(`status ${status} before the first piece`);
    this.name = 'FailedBeforeFirstPiece';
    const hints: Record<string, string | null> = {
      'retry-after-ms': typeof data.retryAfterMs === 'number' && data.retryAfterMs > 0 ? String(data.retryAfterMs) : null,
      'retry-after': null,
      'x-should-retry': data.shouldRetry === false ? 'false' : null,
    };
    this.headers = {
      get: (name) => {
        const key = name.toLowerCase();
        // The hints are the answer's own; the 200's headers (x-request-id) otherwise.
        return key in hints ? hints[key] : streamHeaders.get(name);
      },
    };
  }
}

/**
 * A long answer's hop that ended before the answer (`event: continue`): the
 * cursor `POST /api/chat/continue` goes on with (docs/api.md, "Long answers").
 */
export class HopEnd {
  constructor(readonly cursor: string) {}
}

/** Carries an exception thrown by the caller's own onDelta out of the attempt loop, untouched. */
export class CallbackError {
  constructor(readonly error: unknown) {}
}

/** Called with each piece of the answer as it arrives, and the whole text so far. */
export type DeltaHandler = (text: string, answerSoFar: string) => void;

/**
 * Reads a 200 text/event-stream body of `POST /api/chat` and resolves with
 * the `done` event's object. `onDelta` hears every piece first.
 *
 * Rejects with a {@link FailedBeforeFirstPiece} on an `error` event with
 * `"partial": false` before any text (judged by the rule as the JSON answer
 * it stands for), and with a {@link StreamFailure} on any other `error`
 * event, on a malformed event, or when the body ends (or breaks) after text
 * had arrived. A body
 * that breaks before any text rejects with the read error itself: nothing
 * was shown, so the attempt is judged like any failed attempt. An exception
 * from `onDelta` ends the stream and rejects with a {@link CallbackError}
 * holding it.
 */
export async function readChatStream<T extends { answer: string }>(response: ResponseLike, onDelta: DeltaHandler | undefined, signal: AbortSignal): Promise<T | HopEnd> {
  let answer = '';
  let started = false;
  let result: T | HopEnd | undefined;
  let callerError: { error: unknown } | undefined;
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const onEvent = (e: SseEvent) => {
    if (result !== undefined) return; // nothing counts after `done`
    switch (e.event) {
      case 'delta': {
        const piece = parseObject(e.data)?.text;
        if (typeof piece !== 'string') throw new StreamFailure('invalid_response', undefined, requestId, answer);
        if (piece === '') return;
        started = true;
        answer += piece;
        try {
          onDelta?.(piece, answer);
        } catch (error) {
          callerError = { error };
          throw error;
        }
        return;
      }
      case 'done': {
        const done = parseObject(e.data);
        if (done === undefined || typeof done.answer !== 'string') throw new StreamFailure('invalid_response', undefined, requestId, answer);
        result = done as T;
        return;
      }
      case 'continue': {
        // The hop is over, the answer is not: the text so far stays, and
        // the cursor goes on where it stopped.
        const cursor = parseObject(e.data)?.cursor;
        if (typeof cursor !== 'string' || cursor === '') throw new StreamFailure('invalid_response', undefined, requestId, answer);
        result = new HopEnd(cursor);
        return;
      }
      case 'error': {
        const data = parseObject(e.data);
        const status = data?.status;
        if (!started && data?.partial === false && Number.isInteger(status) && status >= 400 && status <= 599 && hintsReadable(data)) {
          throw new FailedBeforeFirstPiece(status, data, response.headers, data);
        }
        const error = parseObject(data?.error);
        throw new StreamFailure(str(error?.code) ?? 'stream_error', str(error?.message), str(error?.requestId) ?? requestId, answer);
      }
      default:
      // Events this client does not know are skipped, so the server can add some.
    }
  };

  try {
    if (response.body) {
      await readSse(response.body, onEvent, signal, () => result !== undefined);
    } else {
      // A transport that cannot stream (it buffered the whole body): the same
      // events, all at once at the end.
      const sse = new SseDecoder(onEvent);
      sse.text(await raceAbort(response.text(), signal));
      sse.end();
    }
  } catch (err) {
    if (callerError !== undefined && err === callerError.error) throw new CallbackError(err);
    if (err instanceof StreamFailure || err instanceof FailedBeforeFirstPiece) throw err;
    if (err instanceof SseLimitError) throw new StreamFailure('invalid_response', undefined, requestId, answer);
    if (result !== undefined) return result;
    // Nothing shown yet: a broken connection, the attempt's timeout or an
    // abort is judged like any failed attempt.
    if (!started) throw err;
    throw new StreamFailure('stream_interrupted', undefined, requestId, answer);
  }
  if (result !== undefined) return result;
  // Closed without `done` or `error`: the connection was cut.
  if (!started) throw new TypeError('the stream ended before the answer started');
  throw new StreamFailure('stream_interrupted', undefined, requestId, answer);
}

/** An early error event's hints, absent or of their types: a garbled one makes the event final (Go's client reads it so too). */
function hintsReadable(data: { shouldRetry?: unknown; retryAfterMs?: unknown }): boolean {
  const { shouldRetry, retryAfterMs } = data;
  return (shouldRetry == null || typeof shouldRetry === 'boolean') && (retryAfterMs == null || Number.isInteger(retryAfterMs));
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function parseObject(v: unknown): any {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return undefined;
    }
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
}
