// The Space Apps card against a `senclaw serve` of its own (real bwrap):
// the example app and small busybox httpd apps registered through the
// API. The card's pages, sorting and running-first order, the list polled
// only while the card is on the screen, the tray's #space-apps anchor,
// Start/Stop, a crash-looping app with its log lines, the Monitor panel
// following the log, the Sandbox dialog (a hosts edit applied live, a
// refused host at its field, the proxy's refusals in the row; enabling
// the sandbox of a running app -> needs restart -> Restart -> bwrap), a
// forced app's locked switch, HTML an app chose shown as text, and the
// empty state. Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launch, openDashboard, requireSetup, screenshot, startDaemon, tempDir, waitFor } from './helpers.mjs';

const EXAMPLE = resolve(process.cwd(), '..', 'examples', 'space-apps');
const HTTPD = 'exec busybox httpd -f -p 127.0.0.1:$PORT -h www';
const XSS_NAME = '<img src=x onerror="window.__xss=1"><b>Bold</b> app';

describe('space apps card', { concurrency: false }, () => {
  let daemon;
  let engine;
  let browser;
  let root;

  before(async (t) => {
    if (!requireSetup(t)) return;
    daemon = await startDaemon({ name: 'spaceapps' });
    engine = daemon.engine;
    browser = await launch();
    root = tempDir('senclaw-apps-src-');
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** register writes an app folder and registers it through the API. */
  async function register(manifest, files = { 'www/health': 'ok\n' }) {
    const dir = join(root, manifest.id);
    for (const [name, data] of Object.entries({ ...files, 'senclaw-app.json': JSON.stringify(manifest) })) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), data);
    }
    return (await engine.apps('POST', '', { dir })).app;
  }

  // Without a sandbox unless a test gives one: an app with no sandbox
  // block runs in one, so these say enabled: false.
  const httpd = (id, name, sandbox = { enabled: false }) => register({ id, name, description: `busybox httpd ${id}`, runtime: { start: HTTPD }, sandbox });

  async function open(t, opts) {
    if (!daemon) return t.skip('no setup'), null;
    const session = await openDashboard(browser, engine, opts);
    t.after(async () => {
      assert.deepEqual(session.problems, [], 'the page logged errors');
      await session.context.close();
    });
    return session.page;
  }

  /** openRow opens the dashboard with the card filtered to app id and
   * returns the page and the app's row ([] without setup). */
  async function openRow(t, id) {
    const page = await open(t);
    if (!page) return [];
    await page.getByTestId('apps-filter').fill(id);
    return [page, row(page, id)];
  }

  const card = (page) => page.locator('[data-card=space-apps]');
  const row = (page, id) => page.locator(`tr.app-row[data-app="${id}"]`);
  const ids = (page) => card(page).locator('tr.app-row').evaluateAll((rows) => rows.map((r) => r.dataset.app));
  const view = async (id) => engine.apps('GET', '/' + id);

  test('with no app, the card says how to add one', async (t) => {
    const page = await open(t);
    if (!page) return;
    const empty = page.getByTestId('apps-empty');
    await empty.waitFor();
    const text = await empty.innerText();
    assert.match(text, /senclaw apps add DIR/);
    assert.match(text, /examples\/space-apps\//);
    await screenshot(page, 'spaceapps-empty');
  });

  test('twelve apps: ten a page, running first, sorted by a column', async (t) => {
    if (!daemon) return t.skip('no setup');
    // The crash-looping app goes first: it takes a while to give up.
    await register({ id: 'crashy', name: 'Crashy', runtime: { start: 'echo "crashy: cannot open <b>config.toml</b>" >&2; exit 3' }, sandbox: { enabled: false } }, {});
    await engine.apps('POST', '/crashy/start?wait=false');
    const names = ['Kilo', 'Alpha', 'Juliet', 'Bravo', 'India', 'Charlie', 'Hotel', 'Delta', 'Golf', 'Echo', 'Foxtrot'];
    for (const [i, name] of names.entries()) await httpd(`bb-${String(i + 1).padStart(2, '0')}`, name);
    // Network modes to sort by (bb-02 hosts with two hosts, bb-04 off).
    await engine.apps('PUT', '/bb-02/sandbox', { network: 'hosts', hosts: ['example.org', 'https://pypi.org/simple'] });
    await engine.apps('PUT', '/bb-04/sandbox', { network: 'off' });
    const up = ['bb-03', 'bb-07', 'bb-11'];
    for (const id of up) assert.equal((await engine.apps('POST', `/${id}/start`)).ok, true, id);

    const page = await open(t);
    if (!page) return;
    await waitFor(async () => (await ids(page)).length === 10, 'a page of ten apps');
    assert.equal(await page.getByTestId('apps-range').innerText(), '1–10 of 12');
    assert.match(await page.getByTestId('apps-count').innerText(), /12 apps, 3 running \(0 sandboxed, 3 without a sandbox\)/);
    // Running first (by name among them: Foxtrot bb-11, Hotel bb-07,
    // Juliet bb-03), then by name (crashy may be launching at the moment
    // of a poll, which puts it among the running).
    const expected = ['bb-11', 'bb-07', 'bb-03', 'bb-02', 'bb-04', 'bb-06', 'crashy', 'bb-08', 'bb-10', 'bb-09'];
    await waitFor(async () => (await ids(page)).join() === expected.join(), `running first, then by name: ${expected}`);
    const r = row(page, 'bb-03');
    assert.match(await r.getByTestId('app-process').innerText(), /PID \d+[\s\S]*up [\s\S]*1 launch/);
    assert.match(await r.getByTestId('app-sandbox').innerText(), /none/);
    assert.equal(await r.getByTestId('no-sandbox').innerText(), 'no sandbox (manifest)');
    assert.equal(await row(page, 'bb-02').getByTestId('no-sandbox').innerText(), 'no sandbox (manifest)');
    assert.match(await r.getByTestId('app-health').innerText(), /ok/);
    const link = r.getByRole('link', { name: 'Juliet' });
    assert.equal(await link.getAttribute('href'), (await view('bb-03')).url);
    assert.equal(await link.getAttribute('title'), 'busybox httpd bb-03');
    assert.match(await row(page, 'bb-02').getByTestId('app-network').innerText(), /hosts\s*· 2 hosts/);
    // CPU/RAM sparklines from the list's spark.
    await waitFor(async () => /RAM: [1-9]/.test((await r.locator('svg[aria-label^="RAM"]').getAttribute('aria-label')) ?? ''), 'a RAM sparkline');

    await page.getByTestId('apps-next').click();
    await waitFor(async () => (await page.getByTestId('apps-range').innerText()) === '11–12 of 12', 'the second page');
    await waitFor(async () => (await ids(page)).join() === 'bb-05,bb-01', 'India and Kilo on the second page');
    await page.getByTestId('apps-prev').click();

    const sortBy = (label) => card(page).getByRole('button', { name: `Sort by ${label}`, exact: true }).click();
    await sortBy('Name');
    await waitFor(async () => (await ids(page))[0] === 'bb-02', 'sorted by name');
    assert.deepEqual((await ids(page)).slice(0, 4), ['bb-02', 'bb-04', 'bb-06', 'crashy']);
    assert.equal(await card(page).locator('th[aria-sort=ascending]').count(), 1);
    assert.match(await card(page).locator('th[aria-sort=ascending]').innerText(), /Name/);
    await sortBy('Name');
    await waitFor(async () => (await ids(page))[0] === 'bb-01', 'sorted by name, descending (Kilo first)');
    await sortBy('Network');
    await waitFor(async () => {
      const got = await ids(page);
      return got.length === 10 && !got.includes('bb-02') && !got.includes('bb-04');
    }, 'sorted by network: the ten "all" first, hosts (bb-02) and off (bb-04) on the next page');
    await sortBy('Network');
    await waitFor(async () => (await ids(page)).slice(0, 2).join() === 'bb-04,bb-02', 'sorted by network, descending: off, then hosts');
    await sortBy('CPU/RAM');
    await waitFor(async () => (await ids(page)).slice(0, 3).sort().join() === [...up].sort().join(), 'by CPU/RAM: the running ones first');
    await sortBy('Process');
    await waitFor(async () => (await ids(page))[0] === 'bb-03', 'by process: the longest up first');
    await sortBy('Sandbox');
    await waitFor(async () => (await ids(page)).slice(0, 3).sort().join() === [...up].sort().join(), 'by sandbox: what the running got first');
    await card(page).getByRole('button', { name: 'Running first' }).click();
    await waitFor(async () => (await ids(page))[0] === 'bb-11', 'running first again');
    await screenshot(page, 'spaceapps-twelve');

    // The filter keeps the matching ones.
    await page.getByTestId('apps-filter').fill('bravo');
    await waitFor(async () => (await ids(page)).join() === 'bb-04', 'the filtered list');
    await page.getByTestId('apps-filter').fill('');
  });

  test('the list is polled only while the card is on the screen', async (t) => {
    const page = await open(t, { width: 1024, height: 600 });
    if (!page) return;
    const polls = [];
    page.on('request', (r) => new URL(r.url()).pathname === '/api/space/apps' && polls.push(Date.now()));
    await page.evaluate(() => scrollTo(0, 0));
    const below = await page.evaluate(() => document.getElementById('space-apps').getBoundingClientRect().top > innerHeight);
    assert.ok(below, 'the card is below the window at the top of the page');
    await new Promise((r) => setTimeout(r, 1500)); // a poll under way ends
    polls.length = 0;
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(polls.length, 0, 'no poll while the card is off the screen');
    await page.locator('#space-apps').scrollIntoViewIfNeeded();
    await waitFor(() => polls.length >= 3, 'polls about every second once it is on the screen', 6000);
  });

  test('the tray\'s anchor scrolls the page to the card', async (t) => {
    const page = await open(t, { width: 1024, height: 600 });
    if (!page) return;
    // A new load (not a jump within the page already there), as the
    // window's or a browser's first one.
    await page.goto('about:blank');
    await page.goto(engine.baseUrl + '/#space-apps');
    await page.waitForSelector('html[data-ready]');
    await waitFor(async () => {
      const top = await page.evaluate(() => document.getElementById('space-apps').getBoundingClientRect().top);
      return Math.abs(top) < 2;
    }, 'the card at the top of the window');
    assert.ok((await page.evaluate(() => scrollY)) > 300, 'the page scrolled');
  });

  test('Start and Stop', async (t) => {
    const [page, r] = await openRow(t, 'bb-05');
    if (!page) return;
    await r.getByRole('button', { name: 'Start India', exact: true }).click();
    // The PID shows once the process is up, while the app may still be
    // starting (its health check not yet answered): wait for running.
    await waitFor(async () => /PID \d+/.test(await r.getByTestId('app-process').innerText()), 'bb-05 started');
    await waitFor(async () => (await r.getAttribute('data-state')) === 'running', 'bb-05 running');
    assert.equal((await view('bb-05')).state, 'running');
    await r.getByRole('button', { name: 'Stop India', exact: true }).click();
    await waitFor(async () => /stopped by a person/.test(await r.getByTestId('app-process').innerText()), 'bb-05 stopped');
    const v = await view('bb-05');
    assert.equal(v.state, 'stopped');
    assert.equal(v.stoppedByUser, true);
  });

  test('a crash-looping app says so with its log lines', async (t) => {
    const [page, r] = await openRow(t, 'crashy');
    if (!page) return;
    await waitFor(async () => (await r.getAttribute('data-state')) === 'crash-looping', 'crashy crash-looping', 90_000);
    assert.match(await r.getByTestId('app-process').innerText(), /crash-looping[\s\S]*gave up after 5 failed starts/);
    const lines = card(page).getByTestId('app-last-log');
    await lines.waitFor();
    // The log line, with the HTML it wrote, as text.
    assert.match(await lines.innerText(), /crashy: cannot open <b>config\.toml<\/b>/);
    assert.equal(await lines.locator('b').count(), 0);
    assert.match(await card(page).locator('.badge.bad', { hasText: 'crash-looping' }).first().innerText(), /1 crash-looping/);
    await screenshot(page, 'spaceapps-crash-looping');
  });

  test('Monitor shows the runtime and follows the log', async (t) => {
    if (!daemon) return t.skip('no setup');
    await engine.apps('POST', '', { dir: EXAMPLE });
    const started = await engine.apps('POST', '/notes/start');
    assert.equal(started.ok, true, started.note);
    const [page, r] = await openRow(t, 'notes');
    if (!page) return;
    await r.getByRole('button', { name: 'Monitor Notes' }).click();
    const panel = page.getByTestId('app-monitor');
    await panel.waitFor();
    const log = panel.getByTestId('app-log').locator('pre');
    await waitFor(async () => /notes: serving on http:\/\/127\.0\.0\.1:\d+\//.test(await log.innerText()), 'the log');
    assert.match(await log.innerText(), /=== senclaw: launch 1 of notes .*isolation bwrap/);
    assert.ok(await panel.getByRole('checkbox', { name: 'Follow' }).isChecked());
    // A request to the app writes a line; Follow shows it.
    const port = started.app.port;
    const res = await fetch(`http://127.0.0.1:${port}/notes?probe=followed-line`);
    assert.equal(res.status, 404, 'the app answered'); // /notes?query is not a route of the example
    await waitFor(async () => /GET \/notes\?probe=followed-line/.test(await log.innerText()), 'the followed line', 15_000);

    await waitFor(async () => (await panel.locator('svg[aria-label^="CPU"]').count()) === 1, 'the CPU chart');
    await waitFor(async () => /Listening \(1\)/.test(await panel.innerText()), 'the listening socket');
    assert.match(await panel.locator('table.sockets').first().innerText(), new RegExp(`127\\.0\\.0\\.1:${port}[\\s\\S]*LISTEN`));
    assert.match(await panel.getByTestId('monitor-proxy').innerText(), /Proxy: \d+ allowed, \d+ refused/);
    assert.equal(await panel.getByTestId('launch-command').innerText(), 'python3 app.py');
    assert.match(await panel.getByRole('table', { name: 'Environment of the launch' }).innerText(), new RegExp(`PORT\\s+${port}`));
    const iso = panel.getByTestId('monitor-isolation');
    await waitFor(async () => /The running process got bwrap/.test(await iso.innerText()), 'the effective isolation');
    assert.match(await iso.innerText(), /Enforced:\s*writes: only its own directory/);
    assert.match(await iso.innerText(), /Enforced:\s*network off/);
    assert.match(await iso.innerText(), /Not enforced:\s*\S/);
    await screenshot(page, 'spaceapps-monitor');

    await panel.getByRole('button', { name: 'Clear log' }).click();
    await waitFor(async () => !/followed-line/.test(await log.innerText()), 'the log cleared');
    assert.equal((await engine.apps('GET', '/notes/logs')).bytes, 0);
    await panel.getByRole('button', { name: 'Close the monitor' }).click();
    await panel.waitFor({ state: 'hidden' });
  });

  test('a hosts edit in the Sandbox dialog applies live', async (t) => {
    if (!daemon) return t.skip('no setup');
    // It asks the proxy for a host it does not allow before it serves.
    await register({
      id: 'hosts-app',
      name: 'Hosts app',
      runtime: { start: 'busybox wget -q -O /dev/null http://refused.invalid/ 2>/dev/null; ' + HTTPD },
      sandbox: { enabled: true, network: 'hosts', hosts: ['example.org'] },
    });
    assert.equal((await engine.apps('POST', '/hosts-app/start')).ok, true);
    const [page, r] = await openRow(t, 'hosts-app');
    if (!page) return;
    await waitFor(async () => /bwrap/.test(await r.getByTestId('app-sandbox').innerText()), 'hosts-app sandboxed');
    assert.match(await r.getByTestId('app-network').innerText(), /hosts\s*· 1 host/);
    const refused = r.getByTestId('app-refused');
    await refused.waitFor();
    assert.equal(await refused.innerText(), '1 refused');
    assert.equal(await refused.getAttribute('title'), 'Last refused: refused.invalid');
    await r.getByRole('button', { name: 'Sandbox of Hosts app' }).click();
    const dialog = page.getByTestId('app-sandbox-dialog');
    try {
      await dialog.getByRole('switch', { name: /Sandbox enabled/ }).waitFor();
    } catch (err) {
      // Say what the dialog showed instead: closed, or its load error.
      const open = await dialog.evaluate((d) => d.open).catch(() => 'gone');
      const text = await dialog.innerText().catch(() => '');
      throw new Error(`the Sandbox dialog never showed its switch (open: ${open}; it says: ${JSON.stringify(text)}): ${err.message}`);
    }
    assert.ok(await dialog.getByRole('radio', { name: /Only these sites/ }).isChecked());
    // A pasted URL becomes its host.
    await dialog.getByRole('textbox', { name: 'Host to allow' }).fill('https://pypi.org/simple/requests/');
    await dialog.getByRole('button', { name: 'Add host' }).click();
    await dialog.locator('li[data-host="pypi.org"]').waitFor();
    // A refused host is shown next to the list, naming it.
    await dialog.getByRole('textbox', { name: 'Host to allow' }).fill('localhost');
    await dialog.getByRole('button', { name: 'Add host' }).click();
    await dialog.getByRole('button', { name: 'Save sandbox' }).click();
    const hostError = dialog.locator('li[data-host="localhost"] [role=alert]');
    await hostError.waitFor();
    assert.match(await hostError.innerText(), /localhost.*names this machine/);
    await dialog.getByRole('button', { name: 'Remove host localhost' }).click();
    await dialog.getByRole('button', { name: 'Save sandbox' }).click();
    await dialog.getByTestId('applied-live').waitFor();
    assert.match(await dialog.getByTestId('applied-live').innerText(), /at once: hosts/);
    assert.equal(await dialog.getByTestId('pending-restart').count(), 0);
    assert.equal(await dialog.getByTestId('dialog-needs-restart').count(), 0);
    await screenshot(page, 'spaceapps-sandbox-live');
    const sb = await engine.apps('GET', '/hosts-app/sandbox');
    assert.deepEqual(sb.running.hosts, ['example.org', 'pypi.org'], 'the running launch got the hosts');
    assert.equal(sb.needsRestart, false);
    await dialog.getByRole('button', { name: 'Close the sandbox dialog' }).click();
    assert.equal(await r.getByTestId('needs-restart').count(), 0);
  });

  test('enabling the sandbox of a running app: needs restart, then Restart gives it bwrap', async (t) => {
    if (!daemon) return t.skip('no setup');
    await httpd('bare-app', 'Bare app');
    assert.equal((await engine.apps('POST', '/bare-app/start')).ok, true);
    const [page, r] = await openRow(t, 'bare-app');
    if (!page) return;
    await waitFor(async () => /none/.test(await r.getByTestId('app-sandbox').innerText()), 'bare-app unsandboxed');
    await r.getByRole('button', { name: 'Sandbox of Bare app' }).click();
    const dialog = page.getByTestId('app-sandbox-dialog');
    const sw = dialog.getByRole('switch', { name: /Sandbox enabled/ });
    await sw.waitFor();
    assert.equal(await sw.isChecked(), false);
    await dialog.locator('label.switch').click();
    await dialog.getByRole('button', { name: 'Save sandbox' }).click();
    await dialog.getByTestId('pending-restart').waitFor();
    assert.match(await dialog.getByTestId('pending-restart').innerText(), /restarted: sandbox on\/off/);
    assert.match(await dialog.getByTestId('dialog-needs-restart').innerText(), /configured with a sandbox, running without one/);
    await dialog.getByRole('button', { name: 'Close the sandbox dialog' }).click();
    const badge = r.getByTestId('needs-restart');
    await badge.waitFor();
    assert.match(await badge.getAttribute('title'), /configured with a sandbox, running without one/);
    assert.match(await page.getByTestId('apps-needs-restart').innerText(), /1 needs restart/);
    await screenshot(page, 'spaceapps-needs-restart');

    await r.getByRole('button', { name: 'Sandbox of Bare app' }).click();
    await dialog.getByRole('button', { name: 'Restart now' }).click();
    await dialog.getByTestId('restart-note').waitFor({ timeout: 40_000 });
    assert.match(await dialog.getByTestId('restart-note').innerText(), /Restarted/);
    assert.equal(await dialog.getByTestId('dialog-needs-restart').count(), 0);
    await dialog.getByRole('button', { name: 'Close the sandbox dialog' }).click();
    await waitFor(async () => /bwrap/.test(await r.getByTestId('app-sandbox').innerText()), 'the Sandbox column says bwrap');
    assert.equal(await r.getByTestId('needs-restart').count(), 0);
    const v = await view('bare-app');
    assert.equal(v.sandbox.isolation, 'bwrap');
    assert.equal(v.needsRestart, false);
  });

  test('a forced app\'s switch is locked, with the reason', async (t) => {
    if (!daemon) return t.skip('no setup');
    await httpd('forced-app', 'Forced app', { force: true });
    const [page, r] = await openRow(t, 'forced-app');
    if (!page) return;
    await r.getByRole('button', { name: 'Sandbox of Forced app' }).click();
    const dialog = page.getByTestId('app-sandbox-dialog');
    const sw = dialog.getByRole('switch', { name: /Sandbox enabled/ });
    await sw.waitFor();
    assert.equal(await sw.isChecked(), true);
    assert.equal(await sw.isDisabled(), true);
    assert.match(await dialog.getByTestId('lock-reason').innerText(), /Locked: the app's manifest forces its sandbox \(sandbox\.force\)/);
    await screenshot(page, 'spaceapps-forced');
  });

  test('HTML in an app\'s name and description is shown as text', async (t) => {
    if (!daemon) return t.skip('no setup');
    await register({ id: 'html-app', name: XSS_NAME, description: '<i>italic</i> description', runtime: { start: HTTPD } });
    const [page, r] = await openRow(t, 'html-app');
    if (!page) return;
    await r.waitFor();
    const name = r.locator('.app-name');
    assert.equal(await name.innerText(), XSS_NAME);
    assert.equal(await name.getAttribute('title'), '<i>italic</i> description');
    assert.equal(await r.locator('img, b, i').count(), 0);
    await r.getByRole('button', { name: 'Sandbox of ' + XSS_NAME }).click();
    assert.equal(await page.getByTestId('app-sandbox-dialog').locator('h2').innerText(), 'Sandbox of ' + XSS_NAME);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
  });
});
