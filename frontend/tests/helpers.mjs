// Helpers of the browser tests: the engine's API with its token, daemons of
// our own (degraded, benchmark), Chromium, logins and screenshots.
//
// scripts/test-browser.sh starts the main daemon and sets:
//   SENCLAW_BIN         the senclaw binary (built with the dashboard in it)
//   SENCLAW_BASE_URL    http://127.0.0.1:PORT of the main daemon
//   SENCLAW_LOGIN_URL   a one-time login URL from `senclaw url`
//   SENCLAW_TOKEN_FILE  $XDG_CONFIG_HOME/senclaw/api-token of that daemon
//   SENCLAW_ARTIFACTS   where screenshots and the benchmark go
//   CHROMIUM            the browser (default /usr/bin/chromium)

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, chmodSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const ARTIFACTS = process.env.SENCLAW_ARTIFACTS || join(process.cwd(), '..', 'test-artifacts');
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** skipReason says why the browser tests cannot run here, or "" when they
 * can. Under CI=true nothing may be missing: the caller fails instead. */
export function skipReason() {
  if (!existsSync(CHROMIUM)) return `no browser at ${CHROMIUM} (apt-get install -y chromium)`;
  if (!process.env.SENCLAW_BASE_URL || !process.env.SENCLAW_TOKEN_FILE || !process.env.SENCLAW_BIN) {
    return 'no daemon: run the browser tests with scripts/test-browser.sh';
  }
  return '';
}

/** requireSetup skips the suite when something is missing on a laptop and
 * fails it under CI, so that CI cannot go green by skipping. */
export function requireSetup(t) {
  const why = skipReason();
  if (!why) return true;
  if (process.env.CI === 'true') throw new Error('browser tests cannot run under CI: ' + why);
  t.skip(why);
  return false;
}

/** Engine is a client of one daemon's API over TCP with its token. */
export class Engine {
  constructor(baseUrl, token) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.token = token;
  }

  static main() {
    const e = new Engine(process.env.SENCLAW_BASE_URL, readFileSync(process.env.SENCLAW_TOKEN_FILE, 'utf8').trim());
    e.firstLogin = process.env.SENCLAW_LOGIN_URL || '';
    return e;
  }

  /** call sends one request and returns [status, body]; root is the
   * API's branch (Space Apps are under /api/space/apps). */
  async call(method, path, body, root = '/api/sandbox') {
    const res = await fetch(this.baseUrl + root + path, {
      method,
      headers: { Authorization: 'Bearer ' + this.token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let data;
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
    return [res.status, data];
  }

  /** api sends one request and returns its body, throwing on an error. */
  async api(method, path, body, root) {
    const [status, data] = await this.call(method, path, body, root);
    if (status >= 300) throw new Error(`${method} ${path}: ${status} ${JSON.stringify(data)}`);
    return data;
  }

  /** apps is api for the Space Apps routes (/api/space/apps + path). */
  async apps(method, path, body) {
    return this.api(method, path, body, '/api/space/apps');
  }

  /** loginUrl makes a fresh one-time login URL (a code works once). */
  async loginUrl() {
    if (this.firstLogin) {
      // The one `senclaw url` printed is used first, so that it is tested.
      const url = this.firstLogin;
      this.firstLogin = '';
      return url;
    }
    const r = await this.api('POST', '/login-codes');
    return this.baseUrl + r.path + r.code;
  }

  /** createSandbox creates a sandbox and returns it. */
  async createSandbox(name, extra = {}) {
    return (await this.api('POST', '/sandboxes', { name, ...extra })).sandbox;
  }

  /** background starts a background command in a sandbox. */
  async background(id, command) {
    return (await this.api('POST', `/sandboxes/${id}/exec`, { command, background: true })).run;
  }
}

/** waitFor polls fn until it returns a truthy value. */
export async function waitFor(fn, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

/** tempDir makes a directory under /tmp that uid 65534 may traverse
 * (0711): a root engine runs sandboxed code as nobody, which must reach
 * its workspace under the data dir. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711);
  return dir;
}

/** startDaemon starts a `senclaw serve` of our own with its own runtime,
 * config and data dirs; env adds to or replaces the environment (PATH to
 * hide bwrap). It resolves once the daemon says where it listens. The
 * daemon can be paused (SIGSTOP: it stops answering), resumed, and
 * restarted on the same address with the same dirs. */
export async function startDaemon({ env = {}, name = 'extra' } = {}) {
  const root = tempDir(`senclaw-${name}-`);
  const dirs = { runtime: join(root, 'run'), config: join(root, 'config'), data: join(root, 'data') };
  for (const d of Object.values(dirs)) mkdirSync(d, { mode: 0o711 });
  chmodSync(dirs.runtime, 0o700);
  chmodSync(dirs.config, 0o700);
  let { child, url } = await serve(dirs, '127.0.0.1:0', env);
  const token = readFileSync(join(dirs.config, 'senclaw', 'api-token'), 'utf8').trim();
  const engine = new Engine(url, token);
  const exit = async () => {
    const exited = new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    await engine.call('POST', '/daemon/stop').catch(() => {});
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    engine,
    dirs,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    /** down stops the daemon and keeps its dirs; up starts it again where it was. */
    down: exit,
    async up() {
      ({ child } = await serve(dirs, new URL(url).host, env));
    },
    async stop() {
      child.kill('SIGCONT');
      await exit();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** serve starts `senclaw serve --listen listen` on dirs and resolves with
 * the process and its URL once it listens. */
async function serve(dirs, listen, env) {
  const child = spawn(process.env.SENCLAW_BIN, ['--data-dir', dirs.data, 'serve', '--listen', listen], {
    env: { ...process.env, XDG_RUNTIME_DIR: dirs.runtime, XDG_CONFIG_HOME: dirs.config, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b) => (stderr += b));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the daemon did not start within 15 s: ' + stderr)), 15_000);
    child.on('exit', (code) => reject(new Error(`the daemon exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = line.match(/^listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  return { child, url };
}

/** launch starts Chromium. */
export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** openDashboard logs a new browser context in and waits for the page's
 * first complete render. */
export async function openDashboard(browser, engine, { width = 1024, height = 768, colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  // A 4xx answer is logged by Chromium as a console error; the page shows
  // those to the user (a refused value), so they are not problems here.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) {
      problems.push('console error: ' + m.text());
    }
  });
  await page.goto(await engine.loginUrl());
  await page.waitForSelector('html[data-ready]', { timeout: 15_000 });
  return { context, page, problems };
}

/** screenshot saves a full-page screenshot under the artifacts dir. */
export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name + '.png');
  await page.screenshot({ path, fullPage: true });
  return path;
}
