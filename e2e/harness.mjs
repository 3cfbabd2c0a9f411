// The stack the browser tests run against: the simulator and the handler,
// built from this checkout, and two demo servers, one on an origin the
// handler allows and one on an origin it does not. Every port is free-picked
// on 127.0.0.1; every process is ours and is stopped by its pid.
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const artifacts = join(repo, 'e2e', 'artifacts');

/** The handler's scaled-down clock for the tests. */
export const BUDGET = '6s';
export const THRESHOLD = '3s';

/** The simulator's time to first token and time per token (streams are paced by them). */
export const SIM_TTFT = '500ms';
export const SIM_PER_TOKEN = '10ms';

/** Debian's Chromium, or CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Headless, and nothing the browser would fetch on its own: each request a test sees is the page's. */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'];

/**
 * Starts Chromium on a fresh profile (launchPersistentContext is how
 * playwright takes --user-data-dir); close() ends it and removes the profile.
 * chromium is playwright-core's, from the caller's own packages: this file
 * imports no npm package, so that the SDK tests (sdk/) start their stack
 * with it without e2e's node_modules.
 */
export async function startBrowser(chromium) {
  const profile = await mkdtemp(join(tmpdir(), 'timebox-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw err;
  }
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** n distinct free ports on 127.0.0.1: all held open at once, then released. */
async function freePorts(n) {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise((resolveServer, reject) => {
      const srv = createServer();
      srv.on('error', reject);
      srv.listen(0, '127.0.0.1', () => resolveServer(srv));
    })),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

async function waitFor(url, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await r.arrayBuffer();
      return r.status;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not answer at ${url} within ${timeoutMs} ms: ${last}`);
}

/** A child process whose output is kept (and saved as an artifact at the end). */
class Proc {
  constructor(name, cmd, args, env) {
    this.name = name;
    this.lines = [];
    this.waiters = new Set(); // { test, resolve } for waitForLine
    this.child = spawn(cmd, args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    this.exited = new Promise((r) =>
      this.child.on('close', (code, signal) => {
        if (partial) this.lines.push(partial);
        if (!this.stopping) this.lines.push(`[e2e] ${name} exited early: code ${code}, signal ${signal}`);
        r({ code, signal });
      }),
    );
    const onData = (chunk) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop();
      this.lines.push(...parts);
      for (const line of parts) {
        for (const w of this.waiters) if (w.test(line)) w.resolve(line);
      }
    };
    this.child.stdout.setEncoding('utf8').on('data', onData);
    this.child.stderr.setEncoding('utf8').on('data', onData);
  }

  /**
   * Resolves with the first line from index `from` on that passes `test`:
   * at once if one is already there, else when it is written. Rejects after
   * timeoutMs (a bound on a broken test, not a measurement).
   */
  waitForLine(test, { from = 0, timeoutMs = 15_000 } = {}) {
    const seen = this.lines.slice(from).find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = {
        test,
        resolve: (line) => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`${this.name}: no such line within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  async stop() {
    this.stopping = true;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The local issuer's test tenant and the app the handler accepts tokens for, with `startStack({ entra: true })`. */
export const ENTRA = { tenant: '11111111-2222-4333-8444-555555555555', audience: 'api://timebox-e2e', scope: 'user_impersonation', oid: '00000000-0000-4000-8000-00000000ad01' };

/**
 * Builds and starts the simulator, the handler (budget 6 s, threshold
 * 3 s) and the two demo servers. Returns their URLs, the handler's log
 * lines, and stop(). With entra, the simulator is also Entra ID (-issuer),
 * the handler runs AUTH_MODE=entra against it, both pages' origins are
 * allowed, and only the first page (demo) gets a token for its calls.
 * With pages = n, n more free ports are picked and their origins allowed
 * (stack.pages: URLs for the caller's own page servers).
 * With quota ({ userDaily }), Azurite's Table service (tools/azurite) holds
 * the handler's quotas, with that limit per user and day; with
 * quota.storeDown, no store answers at the quota endpoint (a port nothing
 * listens on), and quota.failOpen sets QUOTA_FAIL_OPEN=true.
 * With pool, the handler routes across a pool of two simulated resources
 * (AZURE_OPENAI_BACKENDS): a (stack.simulator, tried first) and b
 * (stack.simulatorB), each playing its backend's directives
 * ([[sim:throttle s=20 backend=a]]).
 */
export async function startStack({ entra = false, pages = 0, deployment = 'gpt-4o-mini', quota = undefined, pool = false } = {}) {
  const bin = await mkdtemp(join(tmpdir(), 'timebox-e2e-'));
  const run = promisify(execFile);
  await Promise.all([
    run('go', ['build', '-o', join(bin, 'handler'), './cmd/handler'], { cwd: repo }),
    run('go', ['build', '-o', join(bin, 'aoaisim'), './cmd/aoaisim'], { cwd: repo }),
  ]);
  const [simPort, apiPort, demoPort, otherPort, tablePort, simPortB, ...pagePorts] = await freePorts(6 + pages);
  const key = 'e2e-key';
  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp' };
  const procs = [];
  const stack = {
    api: `http://127.0.0.1:${apiPort}`,
    demo: `http://127.0.0.1:${demoPort}`,
    otherDemo: `http://127.0.0.1:${otherPort}`,
    pages: pagePorts.map((p) => `http://127.0.0.1:${p}`),
    sim: `http://127.0.0.1:${simPort}`,
    procs,
    handler: undefined,
    simulator: undefined,
    /** The simulator's log lines for its upstream requests ("aoai request"), parsed, from index on. */
    upstreamLog(from = 0) {
      return stack.simulator.lines.slice(from).flatMap((l) => {
        try {
          const j = JSON.parse(l);
          return j.msg === 'aoai request' ? [j] : [];
        } catch {
          return [];
        }
      });
    },
    /** Resolves with the handler's request log line (parsed) for which test(line) holds, once it is written. */
    async waitForRequestLog(test, options) {
      const parse = (l) => {
        try {
          const j = JSON.parse(l);
          return j.msg === 'request' ? j : undefined;
        } catch {
          return undefined;
        }
      };
      return parse(await stack.handler.waitForLine((l) => {
        const j = parse(l);
        return j !== undefined && test(j);
      }, options));
    },
    /**
     * Resolves once count request log lines (parsed) from index `from` on
     * pass test: at once if they are there, else as they are written.
     */
    async waitForRequestLogs(test, count, { from = 0, timeoutMs } = {}) {
      let at = from;
      for (let i = 0; i < count; i++) {
        const line = await stack.handler.waitForLine((l) => {
          try {
            const j = JSON.parse(l);
            return j.msg === 'request' && test(j);
          } catch {
            return false;
          }
        }, { from: at, timeoutMs });
        at = stack.handler.lines.indexOf(line, at) + 1;
      }
    },
    /** Resolves once count upstream log lines of the simulator from index `from` on are written. */
    async waitForUpstreamLogs(count, { from = 0, timeoutMs } = {}) {
      let at = from;
      for (let i = 0; i < count; i++) {
        const line = await stack.simulator.waitForLine((l) => l.includes('"msg":"aoai request"'), { from: at, timeoutMs });
        at = stack.simulator.lines.indexOf(line, at) + 1;
      }
    },
    /** The handler's JSON log lines ("msg":"request") from index on. */
    requestLog(from = 0) {
      return stack.handler.lines.slice(from).flatMap((l) => {
        try {
          const j = JSON.parse(l);
          return j.msg === 'request' ? [j] : [];
        } catch {
          return [];
        }
      });
    },
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      await mkdir(artifacts, { recursive: true });
      for (const p of procs) await writeFile(join(artifacts, `${p.name}.log`), p.lines.join('\n') + '\n');
      await rm(bin, { recursive: true, force: true });
    },
  };
  try {
    // The latency model the streaming tests count on, stated rather than
    // inherited: a 1024-token answer (the handler's default limit) takes
    // over 10 s, past the 6 s budget; counting to 100 takes about 2.5 s.
    const simArgs = ['-api-key', key, '-deployments', deployment, '-ttft', SIM_TTFT, '-per-token', SIM_PER_TOKEN];
    stack.simulator = new Proc('aoaisim', join(bin, 'aoaisim'), ['-addr', `127.0.0.1:${simPort}`, ...simArgs, ...(entra ? ['-issuer'] : []), ...(pool ? ['-backend', 'a'] : [])], baseEnv);
    procs.push(stack.simulator);
    let upstream = { AZURE_OPENAI_ENDPOINT: `http://127.0.0.1:${simPort}`, AZURE_OPENAI_API_KEY: key };
    if (pool) {
      stack.simulatorB = new Proc('aoaisim-b', join(bin, 'aoaisim'), ['-addr', `127.0.0.1:${simPortB}`, ...simArgs, '-backend', 'b'], baseEnv);
      procs.push(stack.simulatorB);
      await waitFor(`http://127.0.0.1:${simPortB}/`, 'the second simulator');
      const entry = (name, port, priority) => ({ name, endpoint: `http://127.0.0.1:${port}`, deployment, priority, apiKeySetting: 'SIM_KEY' });
      upstream = { AZURE_OPENAI_BACKENDS: JSON.stringify([entry('a', simPort, 1), entry('b', simPortB, 2)]), SIM_KEY: key };
    }
    const issuer = `http://127.0.0.1:${simPort}`;
    const auth = entra
      ? { AUTH_MODE: 'entra', AUTH_AUDIENCE: ENTRA.audience, AUTH_TENANTS: ENTRA.tenant, AUTH_REQUIRED_SCOPE: ENTRA.scope, AZURE_AUTHORITY_HOST: issuer }
      : {};
    await waitFor(`http://127.0.0.1:${simPort}/`, 'the simulator');
    let quotas = {};
    if (quota) {
      if (!quota.storeDown) {
        const azurite = new Proc('azurite', 'bash', ['scripts/azurite.sh', 'table', String(tablePort)], baseEnv);
        procs.push(azurite);
        await azurite.waitForLine((l) => l.includes('successfully started'), { timeoutMs: 60_000 });
      }
      quotas = {
        QUOTA_TABLE_ENDPOINT: `http://127.0.0.1:${tablePort}/devstoreaccount1`,
        QUOTA_USER_DAILY_TOKENS: String(quota.userDaily),
        ...(quota.failOpen ? { QUOTA_FAIL_OPEN: 'true' } : {}),
      };
    }
    stack.handler = new Proc('handler', join(bin, 'handler'), [], {
      ...baseEnv,
      FUNCTIONS_CUSTOMHANDLER_PORT: String(apiPort),
      ...upstream,
      AZURE_OPENAI_DEPLOYMENT: deployment,
      REQUEST_BUDGET: BUDGET,
      FAST_FAILURE_THRESHOLD: THRESHOLD,
      ALLOWED_ORIGINS: [stack.demo, ...(entra ? [stack.otherDemo] : []), ...stack.pages].join(','),
      ...auth,
      ...quotas,
    });
    procs.push(stack.handler);
    await waitFor(`${stack.api}/api/health`, 'the handler');
    for (const [name, port] of [['demo', demoPort], ['demo-disallowed', otherPort]]) {
      const token = entra && name === 'demo' ? ['--token-url', `${issuer}/${ENTRA.tenant}/oauth2/v2.0/token`, '--token-scope', `${ENTRA.audience}/${ENTRA.scope}`] : [];
      procs.push(new Proc(name, process.execPath, ['demo/serve.mjs', '--port', String(port), '--api', stack.api, '--threshold', THRESHOLD, '--budget', BUDGET, ...token], baseEnv));
      await waitFor(`http://127.0.0.1:${port}/config.js`, name);
    }
  } catch (err) {
    await stack.stop();
    throw err;
  }
  return stack;
}
