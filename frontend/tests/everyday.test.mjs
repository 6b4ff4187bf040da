// Everyday use of the dashboard: the engine going away under
// the page and coming back, the sandboxes' ids and listen links, the runs'
// filters and "show more", the settings a person changes in the Defaults
// card, durations in seconds, the favicon. Its own daemon, so that it can
// be paused and restarted. Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launch, openDashboard, requireSetup, screenshot, startDaemon, waitFor } from './helpers.mjs';

describe('everyday', { concurrency: false }, () => {
  let daemon;
  let browser;

  before(async (t) => {
    if (!requireSetup(t)) return;
    daemon = await startDaemon({ name: 'everyday' });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  async function open(t) {
    if (!daemon) return t.skip('no setup'), null;
    const session = await openDashboard(browser, daemon.engine);
    t.after(() => session.context.close());
    return session;
  }

  /** controlsOff says whether the page's controls are all disabled. */
  const controlsOff = (page) =>
    page.evaluate(() => {
      const controls = [...document.querySelectorAll('main button, main input, main select, main textarea')];
      return controls.length > 0 && controls.every((c) => c.matches(':disabled'));
    });

  test('the engine stops answering: one message, stale data, controls off; back when it answers', async (t) => {
    const session = await open(t);
    if (!session) return;
    const { page } = session;
    const { engine } = daemon;
    await engine.createSandbox('down-check');
    await page.locator('tr.sb-row[data-name="down-check"]').waitFor();
    assert.equal(await page.getByTestId('offline').count(), 0);
    assert.equal(await controlsOff(page), false);

    // A hung engine (SIGSTOP): its reads time out.
    daemon.pause();
    try {
      const banner = page.getByTestId('offline');
      await banner.waitFor({ timeout: 30_000 });
      const text = await banner.innerText();
      assert.match(text, /^The engine does not answer\. What the page shows is from .+ and may be out of date\. The controls are off until it answers again/);
      assert.doesNotMatch(text, /TypeError|Failed to fetch|does not answer.*does not answer/);
      const alerts = await page.getByRole('alert').filter({ hasText: 'does not answer' }).allInnerTexts();
      assert.equal(alerts.length, 1, `one message, not one per card: ${JSON.stringify(alerts)}`);
      assert.ok(await page.locator('main.stale').count(), 'the data is greyed as stale');
      assert.ok(await controlsOff(page), 'every control is disabled');
      assert.ok(await page.locator('tr.sb-row[data-name="down-check"]').isVisible(), 'the last data stays on the page');
      await screenshot(page, 'engine-down');
    } finally {
      daemon.resume();
    }
    await page.getByTestId('offline').waitFor({ state: 'detached', timeout: 15_000 });
    await waitFor(async () => !(await controlsOff(page)), 'the controls back');
    assert.equal(await page.locator('main.stale').count(), 0);

    // A daemon that really stops: the same message; started again, the
    // page's session is gone with it, and the page says what to do.
    await daemon.down();
    await page.getByTestId('offline').waitFor({ timeout: 15_000 });
    assert.match(await page.getByTestId('offline').innerText(), /^The engine does not answer\./);
    assert.ok(await controlsOff(page));
    await daemon.up();
    await waitFor(async () => /senclaw url/.test(await page.getByTestId('offline').innerText()), 'the page to say how to log in again');
    // Logged in again, everything is back.
    const again = await open(t);
    assert.equal(await again.page.getByTestId('offline').count(), 0);
    assert.equal(await controlsOff(again.page), false);
    assert.deepEqual(again.problems, [], 'the page logged errors');
  });

  test('managed sandboxes: an ID column, listen ports as links to 127.0.0.1', async (t) => {
    const { engine } = daemon ?? {};
    const session = await open(t);
    if (!session) return;
    const { page, problems } = session;
    const sb = await engine.createSandbox('served', { listenPorts: [18080, 18081] });
    const row = page.locator('tr.sb-row[data-name="served"]');
    await row.waitFor();
    assert.equal(await page.locator('[data-card=sandboxes] thead th').nth(1).innerText(), 'ID');
    assert.equal(await row.locator('td[data-label=ID]').innerText(), sb.id);
    const links = row.locator('a.listen');
    assert.deepEqual(await links.evaluateAll((as) => as.map((a) => a.getAttribute('href'))), ['http://127.0.0.1:18080/', 'http://127.0.0.1:18081/']);
    assert.match(await row.locator('td[data-label=Network]').innerText(), /^off · listen 127\.0\.0\.1:18080, 127\.0\.0\.1:18081/);
    assert.equal(await links.first().getAttribute('rel'), 'noopener noreferrer');
    assert.deepEqual(problems, []);
  });

  test('a sandbox on another machine\'s engine: its row names the engine, the card lists it, unreachable says so', async (t) => {
    const { engine } = daemon ?? {};
    const session = await open(t);
    if (!session) return;
    const { page, problems } = session;
    // An engine whose socket answers nobody: a machine that is off.
    await engine.api('PUT', '/settings', { engines: [{ name: 'far', host: 'unix:///nonexistent/senclaw-far.sock' }] });
    t.after(async () => {
      const { sandboxes } = await engine.api('GET', '/sandboxes?q=on-far');
      for (const sb of sandboxes) await engine.call('DELETE', `/sandboxes/${sb.id}?purge=1`);
      await engine.api('PUT', '/settings', { engines: [] });
    });
    const sb = await engine.createSandbox('on-far', { engine: 'far' });
    assert.equal(sb.engine, 'far');
    const row = page.locator('tr.sb-row[data-name="on-far"]');
    await row.waitFor();
    assert.equal(await row.locator('.tag.engine').innerText(), 'on far');
    await waitFor(async () => (await row.locator('td[data-label=State]').innerText()).trim() === 'unreachable', 'the row to say unreachable', 20_000);
    const card = page.locator('[data-testid=engines] li[data-engine=far]');
    await card.waitFor();
    assert.match(await card.innerText(), /far \(another machine\)/);
    assert.deepEqual(problems, []);
  });

  test('recent runs: filtered by source, sandbox and refused, paged, durations in seconds', async (t) => {
    const { engine } = daemon ?? {};
    const session = await open(t);
    if (!session) return;
    const { page, problems } = session;
    const a = await engine.createSandbox('runs-a');
    const b = await engine.createSandbox('runs-b');
    for (let i = 0; i < 36; i++) {
      await engine.api('POST', `/sandboxes/${a.id}/exec`, { command: `echo a-${i}`, source: 'cli' });
    }
    for (let i = 0; i < 4; i++) {
      await engine.api('POST', `/sandboxes/${b.id}/exec`, { command: `echo b-${i}`, source: 'mcp' });
    }
    // Refused: the direct backend without allowDirect.
    const [status, body] = await engine.call('POST', '/run-once', { backend: 'direct', command: 'echo refused-here' });
    assert.equal(status, 403, JSON.stringify(body));
    const total = (await engine.api('GET', '/runs?limit=1')).total;

    const card = page.locator('[data-card=runs]');
    const rows = card.locator('tr[data-run]');
    await waitFor(async () => (await rows.count()) === 30, '30 runs at first');
    // One pager: Next shows the next thirty.
    await card.getByTestId('runs-next').click();
    await waitFor(async () => (await card.getByTestId('runs-range').innerText()) === `31–${Math.min(60, total)} of ${total}`, 'the next thirty');
    await waitFor(async () => (await rows.count()) === Math.min(60, total) - 30, 'the second page of rows');
    await card.getByTestId('runs-prev').click();
    await waitFor(async () => (await rows.count()) === 30, 'the first page again');

    await card.getByTestId('runs-source').selectOption('mcp');
    await waitFor(async () => (await rows.count()) === 4, 'the mcp runs');
    assert.ok((await rows.allInnerTexts()).every((r) => /\bmcp\b/.test(r)));
    await card.getByTestId('runs-source').selectOption('');

    await card.getByTestId('runs-refused').check();
    await waitFor(async () => (await rows.count()) === 1, 'the refused run');
    assert.match(await rows.first().innerText(), /refused-here[\s\S]*refused/);
    await card.getByTestId('runs-refused').uncheck();

    await waitFor(async () => (await card.getByTestId('run-sandbox').filter({ hasText: 'runs-b' }).count()) > 0, 'a run of runs-b listed');
    await card.getByTestId('run-sandbox').filter({ hasText: 'runs-b' }).first().click();
    await waitFor(async () => (await rows.count()) === 4, "runs-b's runs");
    assert.match(await card.getByTestId('runs-sandbox').innerText(), /Sandbox runs-b/);
    await card.getByTestId('runs-sandbox').getByRole('button').click();
    await waitFor(async () => (await rows.count()) > 4, 'every sandbox again');

    // Durations are seconds, with the unit.
    const durations = await card.locator('td[data-label=Duration]').allInnerTexts();
    assert.ok(durations.length && durations.every((d) => /^(\d+\.\d+ s|\d+ min( \d+ s)?|–)$/.test(d.trim())), `durations: ${durations.slice(0, 5)}`);
    await screenshot(page, 'runs-filtered');
    assert.deepEqual(problems.filter((p) => !/status of 403/.test(p)), []);
  });

  test('defaults: image, allow direct, pool size, notifications and disk quota, errors by the field', async (t) => {
    const { engine } = daemon ?? {};
    const session = await open(t);
    if (!session) return;
    const { page, problems } = session;
    const before = await engine.api('GET', '/settings');
    t.after(() => engine.api('PUT', '/settings', before));
    assert.equal(await page.locator('#defaultImage').inputValue(), before.defaultImage);
    assert.equal(await page.locator('#allowDirect').isChecked(), before.allowDirect);
    assert.equal(await page.locator('#dockerPoolSize').inputValue(), String(before.dockerPoolSize));
    assert.equal(await page.locator('#notifications').isChecked(), before.notifications);
    // sbx_settings sends people here for these two.
    assert.equal(await page.locator('#landlockListen').isChecked(), before.landlockListen);
    assert.equal(await page.locator('#defaultDiskMb').inputValue(), String(before.defaultDiskMb));

    const save = page.getByRole('button', { name: 'Save defaults' });
    await page.locator('#dockerPoolSize').fill('99');
    await save.click();
    await page.locator('[data-field=dockerPoolSize]').waitFor();
    assert.match(await page.locator('[data-field=dockerPoolSize]').innerText(), /dockerPoolSize.*0 .*16/);
    await page.locator('#dockerPoolSize').fill('1');
    await page.locator('#defaultImage').fill('Not An Image!');
    await save.click();
    await page.locator('[data-field=defaultImage]').waitFor();
    assert.match(await page.locator('[data-field=defaultImage]').innerText(), /defaultImage/);
    assert.equal((await engine.api('GET', '/settings')).dockerPoolSize, before.dockerPoolSize, 'a refused change changed something');

    await page.locator('#defaultImage').fill('debian:trixie-slim');
    await page.locator('#allowDirect').check();
    await page.locator('#notifications').setChecked(!before.notifications);
    await page.locator('#defaultDiskMb').fill('4096');
    await page.locator('#defaultTimeoutMs').fill('45');
    await save.click();
    await waitFor(async () => (await engine.api('GET', '/settings')).defaultImage === 'debian:trixie-slim', 'the settings saved');
    const saved = await engine.api('GET', '/settings');
    assert.equal(saved.allowDirect, true);
    assert.equal(saved.dockerPoolSize, 1);
    assert.equal(saved.notifications, !before.notifications);
    assert.equal(saved.defaultDiskMb, 4096);
    assert.equal(saved.defaultTimeoutMs, 45000, 'the timeout is given in seconds');
    assert.deepEqual(problems, []);
  });

  test('the favicon is the app icon', async (t) => {
    const session = await open(t);
    if (!session) return;
    const { page } = session;
    const href = await page.locator('link[rel=icon]').getAttribute('href');
    assert.equal(href, '/favicon.png');
    const res = await page.request.get(new URL(href, page.url()).href);
    assert.equal(res.status(), 200);
    assert.equal(res.headers()['content-type'], 'image/png');
    assert.ok((await res.body()).subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG');
  });
});
