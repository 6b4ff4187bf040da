// The Managed sandboxes and Recent runs cards with thousands of items:
// 3,000 sandboxes make a page of 25, not a 196,460 px page; the cards page
// and filter on the engine's side. Its own daemon keeps the 3,000
// sandboxes out of the other tests. Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launch, openDashboard, requireSetup, screenshot, startDaemon, waitFor } from './helpers.mjs';

const SANDBOXES = 3000;

let daemon;
let browser;

before(async (t) => {
  if (!requireSetup(t)) return;
  daemon = await startDaemon({ name: 'paging' });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

test(`${SANDBOXES} sandboxes: a page of them, paged and filtered`, async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  // Past the default bound (500): the engine refuses, naming it.
  await engine.api('PUT', '/settings', { maxSandboxes: 500 });
  let bounded = true;
  for (let i = 0; i < SANDBOXES; i += 100) {
    const made = await Promise.all(
      Array.from({ length: 100 }, (_, j) => engine.call('POST', '/sandboxes', { name: `pg-${String(i + j).padStart(4, '0')}` })),
    );
    if (i === 500 && bounded) {
      bounded = false;
      const [status, body] = made[0];
      assert.equal(status, 429, 'a creation past maxSandboxes is refused');
      assert.equal(body.field, 'maxSandboxes');
      await engine.api('PUT', '/settings', { maxSandboxes: SANDBOXES });
      i -= 100; // make this batch again, now that the bound allows it
      continue;
    }
    for (const [status, body] of made) assert.equal(status, 201, JSON.stringify(body));
  }
  const all = await engine.api('GET', '/sandboxes?limit=1');
  assert.equal(all.total, SANDBOXES);
  for (let i = 0; i < 40; i++) {
    await engine.api('POST', '/run-once', { backend: 'bwrap', command: `echo paged-run-${i}` });
  }

  const { page, context, problems } = await openDashboard(browser, engine);
  t.after(async () => {
    assert.deepEqual(problems, [], 'the page logged errors');
    await context.close();
  });
  const card = page.locator('[data-card=sandboxes]');
  await waitFor(async () => (await card.locator('tr.sb-row').count()) === 25, 'a page of 25 sandbox rows');
  assert.match(await page.getByTestId('sandbox-count').innerText(), /3000 sandboxes, 0 running/);
  assert.equal(await page.getByTestId('sandboxes-range').innerText(), `1–25 of ${SANDBOXES}`);
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  // About 6,700 px with a page of 25 rows and every card (the ID column,
  // the runs' filters and the settings fields included); all 3,000 rows
  // would be some 200,000.
  assert.ok(height < 8000, `the page is ${height} px tall with ${SANDBOXES} sandboxes`);
  t.diagnostic(`the page with ${SANDBOXES} sandboxes is ${height} px tall`);
  await screenshot(page, 'paging-3000-sandboxes');

  // Newest first: the first page holds sandboxes of the last hundred
  // made; Next shows 25 others.
  const names = () => card.locator('tr.sb-row').evaluateAll((rows) => rows.map((r) => r.dataset.name));
  const firstPage = await names();
  assert.ok(firstPage.every((n) => n >= 'pg-2900'), `the first page: ${firstPage}`);
  assert.ok(await page.getByTestId('sandboxes-prev').isDisabled());
  await page.getByTestId('sandboxes-next').click();
  await waitFor(async () => (await page.getByTestId('sandboxes-range').innerText()) === `26–50 of ${SANDBOXES}`, 'the second page');
  await waitFor(async () => (await names()).every((n) => !firstPage.includes(n)), 'the second page\'s rows');
  assert.equal((await names()).length, 25);

  // The filter asks the engine, from the first page.
  await page.getByTestId('sandboxes-filter').fill('pg-004');
  await waitFor(async () => (await page.getByTestId('sandboxes-range').innerText()) === '1–10 of 10 matching', 'the filtered list');
  assert.equal(await card.locator('tr.sb-row').count(), 10);
  assert.match(await page.getByTestId('sandbox-count').innerText(), /10 matching/);
  await page.getByTestId('sandboxes-filter').fill('no-such-sandbox');
  await card.getByText('No sandbox matches').waitFor();
  await page.getByTestId('sandboxes-filter').fill('');
  await waitFor(async () => (await page.getByTestId('sandboxes-range').innerText()) === `1–25 of ${SANDBOXES}`, 'the whole list again');

  // Recent runs page the same way: 30 a page, filtered.
  const runs = page.locator('[data-card=runs]');
  await waitFor(async () => (await runs.locator('tr[data-run]').count()) === 30, 'a page of 30 runs');
  await page.getByTestId('runs-next').click();
  await waitFor(async () => /^31–\d+ of \d+$/.test(await page.getByTestId('runs-range').innerText()), 'the second page of runs');
  await page.getByTestId('runs-filter').fill('paged-run-7');
  await waitFor(async () => (await page.getByTestId('runs-range').innerText()) === '1–1 of 1 matching', 'the filtered runs');
  assert.match(await runs.locator('tr[data-run]').innerText(), /paged-run-7/);
});
