// SPFx up to 1.19 bundles with webpack 4, whose parser is acorn 6 at
// ecmaVersion 11 (webpack 4.47.0, lib/Parser.js): it cannot read optional
// chaining, `??` or class fields in node_modules ("Module parse failed:
// Unexpected token", SharePoint/sp-dev-docs#8638). The built package must
// parse the way webpack 4 parses it, so that every SPFx web part can bundle it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { Parser, type Options } from 'acorn';

// webpack 4.47.0's defaultParserOptions; acorn 6's types stop at 2019, the
// parser itself takes 11 (2020 without optional chaining or `??`).
const webpack4 = { ranges: true, locations: true, ecmaVersion: 11, sourceType: 'module' } as unknown as Options;

const dist = new URL('../../dist/', import.meta.url);

test('webpack 4 (acorn 6) refuses the syntax it cannot bundle', () => {
  for (const src of ['a?.b', 'a ?? b', 'class A { x = 1 }']) {
    assert.throws(() => Parser.parse(src, webpack4), SyntaxError, src);
  }
});

test('every module of the built package parses as webpack 4 parses it', async () => {
  const files = (await readdir(dist)).filter((f) => f.endsWith('.js'));
  assert.ok(files.length >= 3, `built modules: ${files.join(', ')}`);
  for (const f of files) {
    const code = await readFile(new URL(f, dist), 'utf8');
    assert.doesNotThrow(() => Parser.parse(code, webpack4), `dist/${f}`);
  }
});

// A web part bundles the client's runtime dependencies too: each must parse
// as webpack 4 parses it (eventsource-parser ships ES2019-level syntax).
test("every module of the client's runtime dependencies parses as webpack 4 parses it", async () => {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies?: Record<string, string> };
  const deps = Object.keys(pkg.dependencies ?? {});
  assert.ok(deps.length > 0);
  for (const dep of deps) {
    const dir = new URL(`../../node_modules/${dep}/dist/`, import.meta.url);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.js'));
    assert.ok(files.length > 0, `${dep}: no dist/*.js`);
    for (const f of files) {
      const code = await readFile(new URL(f, dir), 'utf8');
      assert.doesNotThrow(() => Parser.parse(code, webpack4), `${dep}/dist/${f}`);
    }
  }
});
