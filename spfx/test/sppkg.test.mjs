// Checks the production package (sharepoint/solution/timebox-ask.sppkg) after
// `heft package-solution --production`: it holds the web part's manifest and
// bundle, requests the API permission the solution declares, and the bundle
// carries @timebox/client's own build (client/dist), not a re-implementation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import JSZip from 'jszip';
import ts from 'typescript';

const root = new URL('..', import.meta.url).pathname;
const stripComments = (s) => s.replace(/^\s*\/\/.*$/gm, '').replace(/\/\/ (Advanced)$/gm, '');
const json = (p) => JSON.parse(stripComments(readFileSync(join(root, p), 'utf8')));
const solution = json('config/package-solution.json');
const manifest = json('src/webparts/ask/AskWebPart.manifest.json');
const zip = await JSZip.loadAsync(readFileSync(join(root, solution.paths.zippedPackage.replace(/^solution\//, 'sharepoint/solution/'))));
const names = Object.keys(zip.files);
const read = (name) => zip.file(name).async('string');

test('the package requests the API permission of package-solution.json', async () => {
  const app = await read('AppManifest.xml');
  for (const r of solution.solution.webApiPermissionRequests) {
    assert.match(app, new RegExp(`<WebApiPermissionRequest ResourceId="${r.resource}" Scope="${r.scope}"`));
  }
});

/** The web part's component manifest as the package registers it (WebPart_<id>.xml). */
async function packagedManifest() {
  const name = names.find((n) => n.endsWith(`/WebPart_${manifest.id}.xml`));
  assert.ok(name, `no WebPart_${manifest.id}.xml in ${names.join(', ')}`);
  const attr = (await read(name)).match(/ComponentManifest="([^"]*)"/);
  assert.ok(attr, 'no ComponentManifest attribute');
  return JSON.parse(attr[1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
}

/** The bundle the manifest names as its entry module, read from ClientSideAssets/. */
async function packagedBundle() {
  const m = await packagedManifest();
  const entry = m.loaderConfig.scriptResources[m.loaderConfig.entryModuleId];
  const name = `ClientSideAssets/${entry.path}`;
  assert.ok(zip.file(name), `the manifest's entry ${name} is not in the package: ${names.join(', ')}`);
  return read(name);
}

test("the package holds the web part's manifest and its bundle", async () => {
  const m = await packagedManifest();
  assert.equal(m.alias, manifest.alias);
  assert.equal(m.componentType, 'WebPart');
  const bundle = await packagedBundle();
  assert.ok(bundle.includes(manifest.id), "the bundle does not register the web part's id");
});

// The client's own string literals that are its implementation, not its API
// (messages and header names, not the reason codes a caller compares with):
// every one must be in the bundle, and none may be written as a literal in
// the web part's own code, so the bundle's copy can only have come from client/dist.
function clientLiterals() {
  const dist = join(root, 'node_modules/@timebox/client/dist');
  const out = new Set();
  for (const f of readdirSync(dist).filter((f) => f.endsWith('.js'))) {
    const source = ts.createSourceFile(f, readFileSync(join(dist, f), 'utf8'), ts.ScriptTarget.ES2020);
    const visit = (node) => {
      // Module specifiers ('./rule.js', 'eventsource-parser') are resolved away by the bundler.
      if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
      if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && node.text.length >= 12 && /[ -]/.test(node.text)) {
        out.add(node.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return [...out];
}

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return f === 'test' ? [] : sourceFiles(p);
    return [p];
  });
}

test("the bundle carries @timebox/client's build", async () => {
  const bundle = await packagedBundle();
  const literals = clientLiterals();
  assert.ok(literals.length >= 6, `too few literals found in client/dist: ${literals.join(', ')}`);
  const missing = literals.filter((s) => !bundle.includes(s));
  assert.deepEqual(missing, [], 'client literals missing from the bundle');
  const own = sourceFiles(join(root, 'src')).map((p) => readFileSync(p, 'utf8')).join('\n');
  const copied = literals.filter((s) => own.includes(`'${s}'`) || own.includes(`"${s}"`));
  assert.deepEqual(copied, [], "the web part's own code repeats the client's literals");
});
