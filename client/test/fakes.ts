import assert from 'node:assert/strict';

import { TimeboxError, type Clock, type ResponseLike, type Transport, type TransportRequest } from '../src/index.js';

/** A virtual clock: time moves only when a test (or settle) moves it. */
export class FakeClock implements Clock {
  t = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];
  private seq = 0;

  now(): number {
    return this.t;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((x) => x !== timer);
    };
  }

  /** Fires the earliest timer, moving time to it; false when none is pending. */
  fireNext(): boolean {
    if (this.timers.length === 0) return false;
    this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = this.timers.shift()!;
    this.t = Math.max(this.t, next.at);
    next.fn();
    return true;
  }

  /** Moves time forward by ms, firing every timer due on the way. */
  advance(ms: number): void {
    const target = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.fireNext();
    }
    this.t = target;
  }

  get pending(): number {
    return this.timers.length;
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));

/**
 * Runs p to completion in virtual time: whenever nothing else can happen,
 * the clock jumps to its next timer (what Go's synctest does for a bubble).
 */
export async function settle<T>(clock: FakeClock, p: Promise<T>): Promise<T> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 10_000 && !done; i++) {
    await tick();
    if (!done && !clock.fireNext()) await tick();
  }
  return p;
}

/** The TimeboxError p fails with; the test fails if p resolves or fails otherwise. */
export async function rejection(p: Promise<unknown>): Promise<TimeboxError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof TimeboxError, `expected a TimeboxError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

/** A canned response. */
export function reply(status: number, body: unknown = {}, headers: Record<string, string> = {}): ResponseLike {
  const h = new Headers(headers);
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { ok: status >= 200 && status < 300, status, headers: h, text: async () => text };
}

/** One piece of a streamed body: `ms` after the previous one, some bytes, or an error, or the end. */
export type Chunk = { ms: number; text?: string; bytes?: Uint8Array; error?: Error; close?: boolean };

/** One SSE event as timebox writes it. */
export function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A streamed body on the virtual clock, and whether its reader cancelled it (the connection closed). */
export type StreamedBody = { response: ResponseLike; cancelled: () => boolean };

/**
 * A real fetch Response whose body plays `chunks` on the virtual clock from
 * the moment it is made. A list that ends with neither `close` nor `error`
 * leaves the body open (a server that went quiet).
 */
export function streamed(clock: FakeClock, chunks: Chunk[], headers: Record<string, string> = { 'content-type': 'text/event-stream' }, status = 200): StreamedBody {
  let cancelled = false;
  const timers: (() => void)[] = [];
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let at = 0;
      for (const c of chunks) {
        at += c.ms;
        timers.push(clock.setTimer(at, () => {
          if (cancelled) return;
          if (c.text !== undefined) controller.enqueue(encoder.encode(c.text));
          if (c.bytes !== undefined) controller.enqueue(c.bytes);
          if (c.error) controller.error(c.error);
          else if (c.close) controller.close();
        }));
      }
    },
    cancel() {
      cancelled = true;
      for (const cancel of timers) cancel();
    },
  });
  return { response: new Response(body, { status, headers }), cancelled: () => cancelled };
}

/** One scripted step: after `ms` of virtual time, answer (or fail, or hang); `respond` makes the answer then. */
export type Step = { ms: number; response?: ResponseLike; respond?: () => ResponseLike; error?: Error; hang?: boolean };

/** A transport that plays steps in order and records every request it got. */
export function scripted(clock: FakeClock, steps: Step[]): Transport & { calls: { url: string; request: TransportRequest; at: number }[] } {
  const calls: { url: string; request: TransportRequest; at: number }[] = [];
  const t = ((url: string, request: TransportRequest) => {
    calls.push({ url, request, at: clock.now() });
    const step = steps[Math.min(calls.length, steps.length) - 1];
    return new Promise<ResponseLike>((resolve, reject) => {
      if (step.hang) return; // only the client's own timer or the caller's signal ends it
      clock.setTimer(step.ms, () => (step.error ? reject(step.error) : resolve(step.respond ? step.respond() : step.response!)));
    });
  }) as Transport & { calls: typeof calls };
  t.calls = calls;
  return t;
}
