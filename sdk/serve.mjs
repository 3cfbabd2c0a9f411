// Serves the SDK test page (page/) and the openai package (node_modules/openai,
// its ES modules as they were published, under /openai/) on its own origin.
// No dependencies: node sdk/serve.mjs --port 5174
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = resolve(fileURLToPath(new URL('.', import.meta.url)));
const roots = { '/openai/': join(here, 'node_modules', 'openai'), '/': join(here, 'page') };
const types = { '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };

const { values } = parseArgs({ options: { port: { type: 'string', default: '5174' }, host: { type: 'string', default: '127.0.0.1' } } });

createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const prefix = Object.keys(roots).find((p) => path.startsWith(p));
  const root = roots[prefix];
  const file = normalize(join(root, path.slice(prefix.length) || 'index.html'));
  if (!file.startsWith(root + sep) && file !== root) {
    res.writeHead(403).end();
    return;
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-store' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
}).listen(Number(values.port), values.host, () => console.log(`sdk page on http://${values.host}:${values.port}`));
