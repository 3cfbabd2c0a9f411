/**
 * Reading a Server-Sent Events body. The line grammar (LF, CR or CRLF line
 * ends, lines and events split anywhere across chunks, comments, multi-line
 * `data`) is eventsource-parser's, a dependency-free parser that follows the
 * WHATWG spec; this module only turns bytes into text (a multi-byte UTF-8
 * character may be split across chunks too), bounds what it holds, and stops
 * on an abort.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { raceAbort } from './abort.js';

/** One event as dispatched by the stream: `event` is 'message' when the server named none. */
export interface SseEvent {
  event: string;
  data: string;
}

/**
 * The most text one event may hold (its `data` lines plus an unfinished
 * line), in UTF-16 code units. timebox's largest event is `done`, which
 * repeats the whole answer; 8 Mi is far above any answer a model writes, and
 * keeps a broken or hostile stream from growing the page's memory without end.
 */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/** The stream broke the SSE grammar's limits (an event over {@link MAX_EVENT_CHARS}). */
export class SseLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SseLimitError';
  }
}

/**
 * Feeds text (decoded from bytes by the caller) and hands back complete
 * events. Comments (`: keep-alive`) are not events.
 */
export class SseDecoder {
  private readonly parser: EventSourceParser;
  private readonly decoder = new TextDecoder('utf-8');
  private limitError: SseLimitError | undefined;
  private crEnded = false; // the text fed last ended in a CR

  constructor(onEvent: (event: SseEvent) => void, maxEventChars = MAX_EVENT_CHARS) {
    this.parser = createParser({
      maxBufferSize: maxEventChars,
      onEvent: (m) => onEvent({ event: m.event === undefined ? 'message' : m.event, data: m.data }),
      onError: (err) => {
        // Unknown fields and bad `retry` values are ignored, as the spec says;
        // only the size limit ends the stream.
        if (err.type === 'max-buffer-size-exceeded') this.limitError = new SseLimitError(err.message);
      },
    });
  }

  /** Feeds raw bytes; a character split across chunks is held until its last byte arrives. */
  bytes(chunk: Uint8Array): void {
    this.text(this.decoder.decode(chunk, { stream: true }));
  }

  /** Feeds decoded text. Throws {@link SseLimitError} once an event outgrows the limit. */
  text(chunk: string): void {
    if (this.limitError) throw this.limitError;
    // eventsource-parser 3 holds a CR that ends a chunk until the next one
    // shows whether an LF follows, so an event closed by lone CRs would
    // wait for more bytes (or be lost at the end). A CR that ends a chunk
    // ends its line now, fed as CRLF; an LF opening the next chunk is then
    // the rest of that CRLF, already counted.
    let text = chunk;
    if (this.crEnded && text.charCodeAt(0) === 10) text = text.slice(1);
    if (chunk !== '') this.crEnded = text.endsWith('\r');
    if (text !== '') this.parser.feed(this.crEnded ? `${text}\n` : text);
    if (this.limitError) throw this.limitError;
  }

  /** Ends the input. An event not closed by a blank line is dropped, as the spec says. */
  end(): void {
    this.text(this.decoder.decode());
  }
}

/**
 * Reads an SSE body to its end, or until `finished()` says the last event
 * has come (the rest is then cancelled), calling `onEvent` for every event as
 * it arrives. Rejects with the read error, an {@link SseLimitError}, an error
 * thrown by `onEvent`, or `signal.reason` as soon as the signal aborts (the
 * body is cancelled then, which closes the connection even when the transport
 * ignored the signal).
 */
export async function readSse(body: ReadableStream<Uint8Array>, onEvent: (event: SseEvent) => void, signal: AbortSignal, finished: () => boolean = () => false): Promise<void> {
  const reader = body.getReader();
  const sse = new SseDecoder(onEvent);
  try {
    for (;;) {
      const { done, value } = await raceAbort(reader.read(), signal);
      if (done) break;
      sse.bytes(value);
      if (finished()) {
        reader.cancel().catch(() => undefined);
        return;
      }
    }
    sse.end();
  } catch (err) {
    // An abort, the limit or onEvent's error: cancelling the body closes the
    // connection, so the server stops (and cancels its upstream call) too.
    reader.cancel(err).catch(() => undefined);
    throw err;
  }
}
