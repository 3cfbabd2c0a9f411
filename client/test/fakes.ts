import type { Clock, ResponseLike, Transport, TransportRequest } from '../src/index.js';

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

/** A canned response. */
export function reply(status: number, body: unknown = {}, headers: Record<string, string> = {}): ResponseLike {
  const h = new Headers(headers);
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { ok: status >= 200 && status < 300, status, headers: h, text: async () => text };
}

/** One scripted step: after `ms` of virtual time, answer (or fail, or hang). */
export type Step = { ms: number; response?: ResponseLike; error?: Error; hang?: boolean };

/** A transport that plays steps in order and records every request it got. */
export function scripted(clock: FakeClock, steps: Step[]): Transport & { calls: { url: string; request: TransportRequest; at: number }[] } {
  const calls: { url: string; request: TransportRequest; at: number }[] = [];
  const t = ((url: string, request: TransportRequest) => {
    calls.push({ url, request, at: clock.now() });
    const step = steps[Math.min(calls.length, steps.length) - 1];
    return new Promise<ResponseLike>((resolve, reject) => {
      if (step.hang) return; // only the client's own timer or the caller's signal ends it
      clock.setTimer(step.ms, () => (step.error ? reject(step.error) : resolve(step.response!)));
    });
  }) as Transport & { calls: typeof calls };
  t.calls = calls;
  return t;
}
