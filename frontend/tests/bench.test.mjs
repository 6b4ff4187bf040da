// Benchmarks, reported and not asserted: the first render of the dashboard
// with 200 sandboxes and 30 runs, and with 100 Space Apps (20 of them
// running), from navigation start to every card rendered (the page's
// data-ready-ms), median of 5 loads in headless Chromium. Their own
// daemons keep the sandboxes and apps out of the other tests.

import { appendFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ARTIFACTS, launch, requireSetup, startDaemon, tempDir } from './helpers.mjs';

const SANDBOXES = 200;
const RUNS = 30;
const LOADS = 5;
// The dashboard shows the sandboxes a page at a time.
const PAGE = 25;

let daemon;
let browser;

before(async (t) => {
  if (!requireSetup(t)) return;
  daemon = await startDaemon({ name: 'bench' });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

test(`first render with ${SANDBOXES} sandboxes and ${RUNS} runs`, async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  const ids = [];
  for (let i = 0; i < SANDBOXES; i += 20) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(20, SANDBOXES - i) }, (_, j) => engine.createSandbox(`bench-${String(i + j).padStart(3, '0')}`)),
    );
    ids.push(...batch.map((s) => s.id));
  }
  // A refused run is a run record too; refusals are counted and reported.
  const refusals = [];
  for (let i = 0; i < RUNS; i++) {
    const [status, body] = await engine.call('POST', `/sandboxes/${ids[i % ids.length]}/exec`, { command: `echo run ${i}` });
    if (status === 403 && body.refused) refusals.push(body.error);
    else assert.equal(status, 200, JSON.stringify(body));
  }
  if (refusals.length) t.diagnostic(`${refusals.length} of ${RUNS} setup runs were refused: ${refusals[0]}`);
  const { sandboxes } = await engine.api('GET', '/sandboxes');
  assert.equal(sandboxes.length, SANDBOXES);

  const { times, median } = await firstRenders(engine, async (page) => {
    const rows = await page.locator('tr.sb-row').count();
    assert.equal(rows, Math.min(SANDBOXES, PAGE), 'the first page of sandbox rows rendered');
    assert.equal(await page.locator('tr[data-run]').count(), RUNS, 'every run rendered');
  });
  const line = `first render, ${SANDBOXES} sandboxes + ${RUNS} runs, headless Chromium: median ${median.toFixed(1)} ms of ${LOADS} loads (${times.map((x) => x.toFixed(1)).join(', ')} ms); target < 300 ms`;
  t.diagnostic(line);
  console.log(line);
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(join(ARTIFACTS, 'bench-first-render.txt'), line + '\n');
});

const APPS = 100;
const APPS_RUNNING = 20;
// The Space Apps card shows ten apps a page.
const APPS_PAGE = 10;

test(`first render with ${APPS} Space Apps, ${APPS_RUNNING} running`, async (t) => {
  if (!browser) return t.skip('no setup');
  const apps = await startDaemon({ name: 'bench-apps' });
  const src = tempDir('senclaw-bench-apps-');
  t.after(async () => {
    await apps.stop();
    rmSync(src, { recursive: true, force: true });
  });
  const { engine } = apps;
  // A realistic mix: half sandboxed, the network modes and hosts of
  // people's apps; the first 20 run busybox httpd (10 under bwrap).
  const networks = [{}, { network: 'hosts', hosts: ['example.org', '*.github.com'] }, { network: 'off' }];
  for (let i = 0; i < APPS; i++) {
    const id = `app-${String(i).padStart(3, '0')}`;
    const dir = join(src, id);
    mkdirSync(join(dir, 'www'), { recursive: true });
    writeFileSync(join(dir, 'www', 'health'), 'ok\n');
    const sandbox = { enabled: i % 2 === 0, readMode: i % 4 === 0 ? 'strict' : 'open', ...networks[i % 3] };
    const manifest = { id, name: `Bench app ${i}`, description: `busybox httpd number ${i}`, runtime: { start: 'exec busybox httpd -f -p 127.0.0.1:$PORT -h www' }, sandbox };
    writeFileSync(join(dir, 'senclaw-app.json'), JSON.stringify(manifest));
    await engine.apps('POST', '', { dir });
  }
  for (let i = 0; i < APPS_RUNNING; i++) {
    const r = await engine.apps('POST', `/app-${String(i).padStart(3, '0')}/start`);
    assert.equal(r.ok, true, r.note);
  }
  const list = await engine.apps('GET', '');
  assert.equal(list.overview.apps, APPS);
  assert.equal(list.overview.running, APPS_RUNNING);
  assert.equal(list.overview.sandboxed, APPS_RUNNING / 2);
  // The CPU/RAM sparklines have a few samples.
  await new Promise((r) => setTimeout(r, 3000));

  const { times, median } = await firstRenders(engine, async (page) => {
    assert.equal(await page.locator('tr.app-row').count(), APPS_PAGE, 'the first page of app rows rendered');
    assert.equal(await page.locator('tr.app-row svg[aria-label^="RAM"]').count(), APPS_PAGE, 'running first: ten rows with sparklines');
  });
  const line = `first render, ${APPS} Space Apps (${APPS_RUNNING} running busybox httpd, ${APPS_RUNNING / 2} under bwrap), headless Chromium: median ${median.toFixed(1)} ms of ${LOADS} loads (${times.map((x) => x.toFixed(1)).join(', ')} ms); target < 300 ms`;
  t.diagnostic(line);
  console.log(line);
  mkdirSync(ARTIFACTS, { recursive: true });
  appendFileSync(join(ARTIFACTS, 'bench-first-render.txt'), line + '\n');
});

/** firstRenders loads the dashboard LOADS times in one logged-in context
 * and returns each load's data-ready-ms and their median; check looks at
 * each rendered page. */
async function firstRenders(engine, check) {
  const context = await browser.newContext({ viewport: { width: 1024, height: 768 } });
  const page = await context.newPage();
  await page.goto(await engine.loginUrl()); // the session cookie for the loads below
  await page.waitForSelector('html[data-ready]');
  const times = [];
  for (let i = 0; i < LOADS; i++) {
    await page.goto(engine.baseUrl + '/');
    await page.waitForSelector('html[data-ready]');
    await check(page);
    times.push(Number(await page.getAttribute('html', 'data-ready-ms')));
  }
  await context.close();
  const sorted = [...times].sort((a, b) => a - b);
  return { times, median: sorted[Math.floor(sorted.length / 2)] };
}
