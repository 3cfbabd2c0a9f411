// The SSE reader, fuzzed: any stream of events, written with LF, CRLF or CR
// line ends, comments between and inside events and an optional BOM, cut
// into chunks at arbitrary byte positions (inside lines, inside CRLF pairs,
// inside multi-byte UTF-8 characters), yields exactly the events written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { readSse, SseDecoder, type SseEvent } from '../src/sse.js';

type Written = { name: string | undefined; lines: string[]; comments: number[] };

// Field values hold any text but line ends.
const value = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ''));
const written: fc.Arbitrary<Written> = fc.record({
  name: fc.option(fc.constantFrom('delta', 'done', 'error', 'message', 'x-unknown'), { nil: undefined }),
  lines: fc.array(value, { minLength: 1, maxLength: 4 }),
  comments: fc.array(fc.nat(4), { maxLength: 2 }),
});
const stream = fc.record({
  events: fc.array(written, { maxLength: 8 }),
  eol: fc.constantFrom('\n', '\r\n', '\r'),
  bom: fc.boolean(),
});

function serialize({ events, eol, bom }: { events: Written[]; eol: string; bom: boolean }): string {
  let out = bom ? '\uFEFF' : '';
  for (const e of events) {
    const fields = [...(e.name === undefined ? [] : [`event: ${e.name}`]), ...e.lines.map((l) => `data: ${l}`)];
    // Comment lines anywhere inside the event, as a keep-alive may fall.
    for (const at of e.comments) fields.splice(Math.min(at, fields.length), 0, ': keep-alive');
    out += fields.map((f) => f + eol).join('') + eol;
  }
  return out;
}

function expected(events: Written[]): SseEvent[] {
  return events.map((e) => ({ event: e.name ?? 'message', data: e.lines.join('\n') }));
}

/** Cuts bytes at the given positions (any order, duplicates allowed). */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const points = [...new Set(at.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    chunks.push(bytes.slice(prev, p));
    prev = p;
  }
  return chunks;
}

function decode(chunks: Uint8Array[]): SseEvent[] {
  const got: SseEvent[] = [];
  const d = new SseDecoder((e) => got.push(e));
  for (const c of chunks) d.bytes(c);
  d.end();
  return got;
}

test('property: arbitrary chunk boundaries yield the events written', () => {
  fc.assert(
    fc.property(stream, fc.array(fc.nat(), { maxLength: 40 }), (s, at) => {
      const bytes = new TextEncoder().encode(serialize(s));
      assert.deepEqual(decode(cut(bytes, at)), expected(s.events));
    }),
    { numRuns: 2000 },
  );
});

test('property: one byte at a time yields the events written', () => {
  fc.assert(
    fc.property(stream, (s) => {
      const bytes = new TextEncoder().encode(serialize(s));
      assert.deepEqual(decode([...bytes].map((b) => Uint8Array.of(b))), expected(s.events));
    }),
    { numRuns: 300 },
  );
});

test('property: readSse over a real ReadableStream agrees with the events written', async () => {
  await fc.assert(
    fc.asyncProperty(stream, fc.array(fc.nat(), { maxLength: 20 }), async (s, at) => {
      const chunks = cut(new TextEncoder().encode(serialize(s)), at);
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (const chunk of chunks) c.enqueue(chunk);
          c.close();
        },
      });
      const got: SseEvent[] = [];
      await readSse(body, (e) => got.push(e), new AbortController().signal);
      assert.deepEqual(got, expected(s.events));
    }),
    { numRuns: 300 },
  );
});

test('an event not closed by a blank line at the end of the stream is dropped', () => {
  assert.deepEqual(decode([new TextEncoder().encode('event: delta\ndata: {"text":"a"}\n\nevent: delta\ndata: {"text":"b"}\n')]), [
    { event: 'delta', data: '{"text":"a"}' },
  ]);
});

test('the documented edge cases: a split CRLF is one line end, a lone CR ends a line, "data:x" keeps no space', () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  assert.deepEqual(decode([enc('data: a\r'), enc('\n\r'), enc('\n')]), [{ event: 'message', data: 'a' }]);
  assert.deepEqual(decode([enc('data:a\rdata:  b\r\r')]), [{ event: 'message', data: 'a\n b' }]);
});
