// The dashboard's first screen, as a person sees it at 1366x768 and
// 1920x1080, against a `senclaw serve` of its own with real data (three
// dozen runs, thirty sandboxes, a Space App that was restarted): the
// switches and the sandboxes without scrolling, the backends in one row
// of chips (the Unix socket guard apart, as a facility), tiles of even
// heights, one paginator per list, the runs' command taking the room,
// a restart not shown as a red kill, and a login link at #space-apps
// that opens there. Screenshots go to test-artifacts/layout-*.png.
// Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS, launch, openDashboard, requireSetup, screenshot, startDaemon, tempDir, waitFor } from './helpers.mjs';

// [width, height, whether the first sandboxes show too]
const SIZES = [
  [1366, 768, true],
  [1920, 1080, true],
  // The desktop window's first size, and a small laptop's: there the
  // switches show, and the sandboxes' card starts.
  [1200, 820, true],
  [1024, 768, false],
];
// The backends' row of chips: one line of them (about 30 px), never
// again a wall of cards.
const MAX_BACKENDS_HEIGHT = 80;
const LONG = 'for f in $(seq 1 20); do echo "processing file number $f of the long list of files to be processed"; done | tail -n 3 && ls -la /usr/share/doc | head -n 40 | wc -l';
const RED = 'rgb(179, 38, 30)';

describe('the first screen', { concurrency: false }, () => {
  let daemon;
  let engine;
  let browser;
  let restarted; // the record of the launch the restart ended

  before(async (t) => {
    if (!requireSetup(t)) return;
    daemon = await startDaemon({ name: 'layout' });
    engine = daemon.engine;
    browser = await launch();
    // Past a page of each list: the pager shows, once.
    for (let i = 0; i < 30; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => engine.createSandbox(`layout-${String(i + j).padStart(2, '0')}`, { network: j % 3 === 0 })));
    }
    const sb = await engine.createSandbox('agent-scratch');
    for (let i = 0; i < 32; i++) await engine.api('POST', '/run-once', { backend: 'bwrap', command: `echo filler-${i}` });
    await engine.api('POST', `/sandboxes/${sb.id}/exec`, { command: LONG });
    await engine.call('POST', '/run-once', { backend: 'direct', command: 'echo refused-here' });

    const dir = join(tempDir('senclaw-layout-app-'), 'bb');
    mkdirSync(join(dir, 'www'), { recursive: true });
    writeFileSync(join(dir, 'www', 'health'), 'ok\n');
    writeFileSync(
      join(dir, 'senclaw-app.json'),
      JSON.stringify({ id: 'bb', name: 'Busy box', runtime: { start: 'exec busybox httpd -f -p 127.0.0.1:$PORT -h www' }, sandbox: { enabled: false } }),
    );
    await engine.apps('POST', '', { dir });
    assert.equal((await engine.apps('POST', '/bb/start')).ok, true);
    assert.equal((await engine.apps('POST', '/bb/restart')).ok, true);
    const { runs } = await engine.api('GET', '/runs?limit=10&source=space-app');
    restarted = runs.find((r) => r.state === 'done');
    assert.ok(restarted, 'the restart ended a launch: ' + JSON.stringify(runs));
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  async function open(t, opts) {
    if (!daemon) return t.skip('no setup'), null;
    const session = await openDashboard(browser, engine, opts);
    t.after(async () => {
      assert.deepEqual(session.problems, [], 'the page logged errors');
      await session.context.close();
    });
    return session.page;
  }

  for (const [width, height, withRows] of SIZES) {
    test(`${width}x${height}: the switches${withRows ? ' and the sandboxes' : ''} without scrolling, nothing cut off`, async (t) => {
      const page = await open(t, { width, height });
      if (!page) return;
      await page.locator('[data-card=runs] tr[data-run]').first().waitFor();
      await page.waitForTimeout(300); // the sparklines' first points
      await page.screenshot({ path: join(ARTIFACTS, `layout-${width}x${height}.png`) });
      await screenshot(page, `layout-${width}x${height}-full`);

      const box = (sel) => page.locator(sel).first().evaluate((el) => el.getBoundingClientRect().toJSON());
      const enforcement = await box('[data-card=enforcement]');
      assert.ok(enforcement.top < height, `the Security enforcement card starts at ${enforcement.top} px, below the first ${height}`);
      // Each switch itself, not only the card's top.
      for (const key of ['execShell', 'schedulerScript', 'runPython', 'runNode']) {
        const sw = await box(`[data-switch=${key}] label.switch`);
        assert.ok(sw.bottom <= height, `the ${key} switch ends at ${sw.bottom} px, below the first ${height}`);
      }
      const sandboxes = await box('[data-card=sandboxes]');
      const firstRow = await box('[data-card=sandboxes] tr.sb-row');
      if (withRows) assert.ok(firstRow.bottom <= height, `the first sandbox row ends at ${firstRow.bottom} px (the card at ${sandboxes.top}), below the first ${height}`);
      else assert.ok(sandboxes.top < height, `the sandboxes' card starts at ${sandboxes.top} px, below the first ${height}`);
      t.diagnostic(`${width}x${height}: enforcement at ${enforcement.top} px, the sandboxes at ${sandboxes.top} px, the first row ends at ${firstRow.bottom} px`);

      const backends = await box('[data-testid=backends]');
      assert.ok(backends.height <= MAX_BACKENDS_HEIGHT, `the backends' list is ${backends.height} px tall`);

      // The switches' tiles: as tall as each other in a row.
      const tiles = await page.locator('[data-card=enforcement] .switch-row').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
      const rows = new Map();
      for (const r of tiles) rows.set(Math.round(r.top), [...(rows.get(Math.round(r.top)) ?? []), r]);
      for (const [top, row] of rows) {
        const heights = row.map((r) => Math.round(r.height));
        assert.ok(Math.max(...heights) - Math.min(...heights) <= 1, `the tiles at ${top} px are of uneven heights: ${heights}`);
      }
      // And they fill their row: no empty column after them.
      const grid = await box('[data-card=enforcement] .switches');
      const right = Math.max(...tiles.map((r) => r.right));
      assert.ok(grid.right - right <= 1, `the tiles end ${grid.right - right} px before their row does`);

      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
      const cut = await page.locator('.card').evaluateAll((cards) =>
        cards.filter((c) => c.scrollWidth > c.clientWidth + 1 || [...c.querySelectorAll('.table-wrap')].some((w) => w.scrollWidth > w.clientWidth + 1)).map((c) => c.dataset.card),
      );
      assert.deepEqual(cut, [], 'cards whose content is wider than they are');
    });
  }

  test('a narrow window: each value of a sandbox or a run beside its label', async (t) => {
    const page = await open(t, { width: 400, height: 800 });
    if (!page) return;
    await page.locator('[data-card=runs] tr[data-run]').first().waitFor();
    // A labelled cell is a grid of two columns, the label and the value:
    // a value in two pieces puts the second under the label.
    const split = await page.locator('[data-card=sandboxes] td[data-label], [data-card=runs] td[data-label]').evaluateAll((cells) =>
      cells
        .filter((c) => [...c.childNodes].filter((n) => n.nodeType === Node.ELEMENT_NODE || (n.nodeType === Node.TEXT_NODE && n.textContent.trim())).length > 1)
        .map((c) => `${c.closest('[data-card]').dataset.card} ${c.dataset.label}: ${c.innerText}`),
    );
    assert.deepEqual(split, [], 'cells whose value is in more than one piece');
    await screenshot(page, 'layout-400x800-full');
  });

  test('the backends are chips with their state; the Unix socket guard is a facility, apart', async (t) => {
    const page = await open(t, { width: 1366, height: 768 });
    if (!page) return;
    const caps = await engine.api('GET', '/caps');
    const list = page.getByTestId('backends');
    assert.deepEqual(
      await list.locator('[data-backend]').evaluateAll((els) => els.map((e) => e.dataset.backend)),
      caps.backends.map((b) => b.backend),
    );
    assert.doesNotMatch(await list.innerText(), /unixguard|socket guard/i, 'a facility among the backends');
    const bwrap = caps.backends.find((b) => b.backend === 'bwrap');
    assert.match(await list.locator('[data-backend=bwrap]').innerText(), new RegExp(`Bubblewrap\\s+healthy\\s+${bwrap.version.replace(/\./g, '\\.')}`));
    for (const f of caps.facilities ?? []) {
      const chip = page.getByTestId('facilities').locator(`[data-facility=${f.backend}]`);
      assert.equal(await chip.count(), 1, `${f.backend} is shown as a facility`);
      const [small, big] = await Promise.all([chip, list.locator('[data-backend=bwrap]')].map((l) => l.evaluate((e) => parseFloat(getComputedStyle(e).fontSize))));
      assert.ok(small < big, `the facility's chip (${small} px) is not smaller than a backend's (${big} px)`);
    }
    // Details on a click: why, and what it enforces; a second click closes them.
    const details = page.getByTestId('iso-details');
    assert.equal(await details.isVisible(), false);
    await list.locator('[data-backend=bwrap]').click();
    await details.waitFor();
    assert.match(await details.innerText(), new RegExp(`Healthy, version[\\s\\S]*${bwrap.reason.slice(0, 20).replace(/[()]/g, '.')}[\\s\\S]*Enforces: ${bwrap.enforces.join(', ')}`));
    await page.screenshot({ path: join(ARTIFACTS, 'layout-1366x768-details.png') });
    await list.locator('[data-backend=bwrap]').click();
    await details.waitFor({ state: 'hidden' });
  });

  test('one paginator per list', async (t) => {
    const page = await open(t, { width: 1366, height: 768 });
    if (!page) return;
    const runs = page.locator('[data-card=runs]');
    await waitFor(async () => (await runs.locator('tr[data-run]').count()) === 30, 'a page of 30 runs');
    assert.equal(await runs.locator('.pager').count(), 1, 'the runs have one pager');
    assert.equal(await runs.getByRole('button', { name: /more/i }).count(), 0, 'a second way to page the runs');
    for (const card of await page.locator('.card').all()) {
      assert.ok((await card.locator('.pager').count()) <= 1, `${await card.getAttribute('data-card')} has more than one pager`);
    }
    await page.getByTestId('runs-next').click();
    await waitFor(async () => /^31–\d+ of \d+$/.test(await page.getByTestId('runs-range').innerText()), 'the second page of runs');
  });

  test('recent runs: the command takes the room, cut, whole on hover and when open', async (t) => {
    const page = await open(t, { width: 1366, height: 768 });
    if (!page) return;
    const { runs } = await engine.api('GET', '/runs?limit=40');
    const long = runs.find((r) => r.command === LONG);
    const short = runs.find((r) => r.command === 'echo filler-31');
    const row = page.locator(`tr[data-run="${long.id}"]`);
    await row.waitFor();
    const [lh, sh] = await Promise.all([row, page.locator(`tr[data-run="${short.id}"]`)].map((r) => r.evaluate((e) => e.getBoundingClientRect().height)));
    assert.ok(Math.abs(lh - sh) <= 1, `the long command's row is ${lh} px tall, a short one's ${sh} px: it wraps`);
    const code = row.locator('th.cmd code');
    assert.ok(await code.evaluate((e) => e.scrollWidth > e.clientWidth), 'the long command is not cut');
    assert.equal(await row.locator('th.cmd button').getAttribute('title'), LONG);
    // The command column takes what the others leave: no gap before When,
    // each other column as wide as its widest text and its padding.
    const columns = await page.locator('table.runs').evaluate((table) => {
      const text = (c) => {
        const r = document.createRange();
        r.selectNodeContents(c);
        const pad = parseFloat(getComputedStyle(c).paddingLeft) + parseFloat(getComputedStyle(c).paddingRight);
        return r.getBoundingClientRect().width + pad;
      };
      const heads = [...table.querySelectorAll('thead th')];
      const rows = [...table.querySelectorAll('tr[data-run]')];
      return heads.map((h, i) => ({ name: h.textContent, width: h.getBoundingClientRect().width, need: Math.max(text(h), ...rows.map((r) => text(r.children[i]))) }));
    });
    const table = await page.locator('table.runs').evaluate((e) => e.getBoundingClientRect().width);
    assert.ok(columns[0].width > table * 0.4, `the command column is ${columns[0].width} of ${table} px`);
    for (const c of columns.slice(1)) {
      assert.ok(c.width - c.need < 8, `the ${c.name} column is ${c.width} px wide for ${c.need} px of text and padding`);
    }
    await row.locator('th.cmd button').click();
    await page.locator(`#out-${long.id}`).waitFor();
    assert.ok(await code.evaluate((e) => e.scrollWidth <= e.clientWidth), 'the open row still cuts the command');
    assert.equal(await code.innerText(), LONG);
    await page.locator('[data-card=runs]').screenshot({ path: join(ARTIFACTS, 'layout-1366x768-runs.png') });
  });

  test("a Space App's restart is not a red kill", async (t) => {
    const page = await open(t, { width: 1366, height: 768 });
    if (!page) return;
    assert.match(restarted.killed, /^restarted by a person/, 'the record says it was restarted');
    const row = page.locator(`tr[data-run="${restarted.id}"]`);
    await row.waitFor();
    const exit = row.locator('td[data-label=Exit]');
    assert.equal((await exit.innerText()).trim(), 'restarted');
    const colours = await row.locator('td, td *').evaluateAll((els) => els.map((e) => getComputedStyle(e).color));
    assert.ok(!colours.includes(RED), 'something in the restarted run\'s row is red');
    assert.equal(await exit.locator('.badge.restart').count(), 1, 'the restart has its own colour');
  });

  for (const how of ['link', 'page']) {
    test(`a login ${how} at #space-apps opens the dashboard at the card`, async (t) => {
      if (!daemon) return t.skip('no setup');
      const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
      t.after(() => context.close());
      const page = await context.newPage();
      // `senclaw url`'s link (GET /login, a redirect), or `senclaw open`'s
      // page (a form posted to /login, answered with a refresh).
      const start = how === 'link' ? await engine.loginUrl() : 'file://' + (await engine.api('POST', '/login-codes?page=1')).file;
      await page.goto(start + '#space-apps');
      await page.waitForSelector('html[data-ready]', { timeout: 15_000 });
      assert.equal(new URL(page.url()).hash, '#space-apps', `the login lost the card: ${page.url()}`);
      await waitFor(async () => Math.abs(await page.evaluate(() => document.getElementById('space-apps').getBoundingClientRect().top)) < 2, 'the card at the top of the window');
      assert.ok((await page.evaluate(() => scrollY)) > 300, 'the page did not scroll');
      assert.match(await page.locator('#space-apps').innerText(), /Busy box/);
      await page.screenshot({ path: join(ARTIFACTS, `layout-space-apps-${how}.png`) });
    });
  }
});
