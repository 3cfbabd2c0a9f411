// Prints the minified (and gzipped) size of the bundle built by `npm run size`.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const code = readFileSync(new URL('../.test-build/size/index.min.js', import.meta.url));
console.log(`@timebox/client: ${code.length} B minified, ${gzipSync(code, { level: 9 }).length} B gzipped (esbuild, ESM, whole API)`);
