// Benchmark, reported and not asserted: the first render of the dashboard
// with 200 sandboxes and 30 runs, from navigation start to every card
// rendered (the page's data-ready-ms), median of 5 loads in headless
// Chromium. Its own daemon keeps the 200 sandboxes out of the other tests.

import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ARTIFACTS, launch, requireSetup, startDaemon } from './helpers.mjs';

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

  const context = await browser.newContext({ viewport: { width: 1024, height: 768 } });
  const page = await context.newPage();
  await page.goto(await engine.loginUrl()); // the session cookie for the loads below
  await page.waitForSelector('html[data-ready]');
  const times = [];
  for (let i = 0; i < LOADS; i++) {
    await page.goto(engine.baseUrl + '/');
    await page.waitForSelector('html[data-ready]');
    const rows = await page.locator('tr.sb-row').count();
    assert.equal(rows, Math.min(SANDBOXES, PAGE), 'the first page of sandbox rows rendered');
    assert.equal(await page.locator('tr[data-run]').count(), RUNS, 'every run rendered');
    times.push(Number(await page.getAttribute('html', 'data-ready-ms')));
  }
  await context.close();
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const line = `first render, ${SANDBOXES} sandboxes + ${RUNS} runs, headless Chromium: median ${median.toFixed(1)} ms of ${LOADS} loads (${times.map((x) => x.toFixed(1)).join(', ')} ms); target < 300 ms`;
  t.diagnostic(line);
  console.log(line);
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(join(ARTIFACTS, 'bench-first-render.txt'), line + '\n');
});
