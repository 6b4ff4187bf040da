// The dashboard against a real `senclaw serve` with a real engine (real
// bwrap): every card shows real data, and what the page does reaches the
// engine. Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ARTIFACTS, Engine, launch, openDashboard, requireSetup, screenshot, waitFor } from './helpers.mjs';

describe('dashboard', { concurrency: false }, () => {
  let engine;
  let browser;
  let ready = false;

  before(async (t) => {
    if (!requireSetup(t)) return;
    engine = Engine.main();
    browser = await launch();
    ready = true;
  });

  after(async () => {
    await browser?.close();
  });

  /** open logs a page in; each test gets its own context. */
  async function open(t, opts) {
    if (!ready) return t.skip('no setup'), null;
    const session = await openDashboard(browser, engine, opts);
    t.after(async () => {
      assert.deepEqual(session.problems, [], 'the page logged errors');
      await session.context.close();
    });
    return session.page;
  }

  const row = (page, name) => page.locator(`tr.sb-row[data-name="${name}"]`);

  test('every card renders real data', async (t) => {
    const sb = await engine.createSandbox('render-check', { fsMode: 'allowlist', network: true, memoryMb: 768 });
    const page = await open(t);
    if (!page) return;
    const [caps, policy, settings, list, runs] = await Promise.all([
      engine.api('GET', '/caps'),
      engine.api('GET', '/exec-policy'),
      engine.api('GET', '/settings'),
      engine.api('GET', '/sandboxes'),
      engine.api('GET', '/runs?limit=30'),
    ]);

    // Available isolation: bwrap is really here, healthy with its version,
    // in its chip; the details say why and what it enforces.
    const bwrap = caps.backends.find((b) => b.backend === 'bwrap');
    assert.equal(bwrap.state, 'healthy', 'bwrap must be installed and working for these tests');
    await page.locator('[data-card=isolation] .overall[data-state=isolated]').waitFor();
    assert.match(await page.locator('[data-backend=bwrap]').innerText(), new RegExp(`healthy\\s+${bwrap.version.replace(/\./g, '\\.')}`));
    const details = page.getByTestId('iso-details');
    await page.locator('[data-backend=bwrap]').click();
    assert.match(await details.innerText(), new RegExp(`Healthy, version ${bwrap.version.replace(/\./g, '\\.')}`));
    const docker = caps.backends.find((b) => b.backend === 'docker');
    if (docker) {
      const want =
        docker.state === 'healthy'
          ? /Healthy, version/
          : docker.details?.daemon === 'not found'
            ? /Not installed/
            : /daemon is not answering/;
      await page.locator('[data-backend=docker]').click();
      assert.match(await details.innerText(), want);
    }
    // Landlock is a backend with its state and what it enforces, never
    // "a facility, not a backend".
    const landlock = caps.backends.find((b) => b.backend === 'landlock');
    assert.ok(landlock, 'landlock is listed among the backends');
    await page.locator('[data-backend=landlock]').click();
    const llText = await details.innerText();
    assert.doesNotMatch(llText, /not a backend/);
    if (landlock.state === 'healthy') {
      assert.match(llText, new RegExp(`Healthy, Landlock ABI ${landlock.details.abi}`));
      assert.match(llText, /Enforces: fs, seccomp/);
      assert.match(await page.getByTestId('landlock-features').innerText(), /Network: .*proxy[\s\S]*Process list: visible/);
    }
    assert.equal(await page.getByTestId('degraded-banner').count(), 0);

    // Security enforcement: each switch as the engine has it.
    for (const key of ['execShell', 'schedulerScript', 'runPython', 'runNode']) {
      assert.equal(await page.locator(`[data-switch=${key}] input[role=switch]`).isChecked(), policy[key], key);
      assert.match(await page.locator(`[data-switch=${key}] .meaning`).innerText(), /On[\s\S]*Off/);
    }
    assert.equal(await page.locator('#execFsMode').inputValue(), policy.execFsMode);
    assert.equal(await page.locator('#execNetwork').isChecked(), policy.execNetwork);
    assert.match(await page.locator('[data-part=shell-settings] summary').innerText(), new RegExp(`disk read ${policy.execFsMode} · network ${policy.execNetwork ? 'on' : 'off'}`));
    // The tenant host policy, under the two switches whose off path it governs.
    assert.equal(await page.locator('#tenantHostPolicy').inputValue(), settings.exec.tenantHostPolicy);
    assert.match(await page.locator('[data-part=tenant-host-policy]').textContent(), /Host exec for agents and tenants/);
    assert.equal(await page.locator('[data-part=host-policy-summary]').innerText(), settings.exec.envOverride ?? settings.exec.tenantHostPolicy);

    // Defaults for new sandboxes.
    assert.equal(await page.locator('#defaultFsMode').inputValue(), settings.defaultFsMode);
    assert.equal(await page.locator('#defaultCpus').inputValue(), String(settings.defaultCpus));
    assert.equal(await page.locator('#defaultMemoryMb').inputValue(), String(settings.defaultMemoryMb));
    assert.equal(await page.locator('#defaultTimeoutMs').inputValue(), String(settings.defaultTimeoutMs / 1000), 'the timeout in seconds');

    // Managed sandboxes: the first page of them (25), with their settings.
    await waitFor(async () => (await page.locator('tr.sb-row').count()) >= Math.min(list.sandboxes.length, 25), 'the first page of sandbox rows');
    const text = await row(page, 'render-check').innerText();
    assert.match(text, /allowlist/);
    assert.match(text, /on/);
    assert.match(text, /768 MB/);
    assert.match(text, /Stop\b/);
    assert.match(text, /Delete \(keep files\)/);
    assert.match(text, /Delete with files/);

    // Recent runs: the newest one is listed with its isolation.
    if (runs.runs.length) {
      const first = runs.runs[0];
      assert.match(await page.locator(`tr[data-run="${first.id}"]`).innerText(), new RegExp(first.isolation.slice(0, 10).replace(/[()]/g, '.')));
    }
    assert.match(await page.locator('[data-card=scope]').innerText(), /does not create sandboxes/);
    await engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`);
  });

  test('the page updates live without reloading', async (t) => {
    const page = await open(t);
    if (!page) return;
    await page.evaluate(() => (window.__sameDocument = true));
    const sb = await engine.createSandbox('live-update');
    await row(page, 'live-update').waitFor({ timeout: 5000 });
    await engine.api('DELETE', `/sandboxes/${sb.id}`);
    await row(page, 'live-update').waitFor({ state: 'detached', timeout: 5000 });
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page reloaded');
  });

  test('toggling a switch changes the policy', async (t) => {
    const page = await open(t);
    if (!page) return;
    const before = await engine.api('GET', '/exec-policy');
    t.after(() => engine.api('PUT', '/exec-policy', before));

    for (const key of ['execShell', 'runNode']) {
      const want = !before[key];
      await page.locator(`[data-switch=${key}] label.switch`).click();
      await waitFor(async () => (await engine.api('GET', '/exec-policy'))[key] === want, `${key} = ${want} in the engine`);
      assert.equal(await page.locator(`[data-switch=${key}] input[role=switch]`).isChecked(), want);
    }
    // The keyboard works too: Space on the focused switch.
    await page.locator('[data-switch=execShell] input[role=switch]').focus();
    await page.keyboard.press('Space');
    await waitFor(async () => (await engine.api('GET', '/exec-policy')).execShell === before.execShell, 'execShell back by keyboard');

    // The agent shell's own settings, behind their one-line summary.
    await page.locator('[data-part=shell-settings] summary').click();
    await page.locator('#execFsMode').selectOption('strict');
    await waitFor(async () => (await engine.api('GET', '/exec-policy')).execFsMode === 'strict', 'execFsMode = strict');
    await page.locator('#execLoopback').fill('8899, 9000');
    await page.locator('#execLoopback').press('Tab');
    await waitFor(async () => (await engine.api('GET', '/exec-policy')).execLoopback.join(',') === '8899,9000', 'execLoopback saved');
  });

  test('the tenant host policy: changed on the card, saved in the engine', async (t) => {
    const page = await open(t);
    if (!page) return;
    const before = await engine.api('GET', '/settings');
    t.after(() => engine.api('PUT', '/settings', { exec: before.exec }));
    // It sits in the Agent shell settings, its value in their summary.
    await page.locator('[data-part=shell-settings] summary').click();
    await page.locator('#tenantHostPolicy').selectOption('deny');
    await waitFor(async () => (await engine.api('GET', '/settings')).exec.tenantHostPolicy === 'deny', 'exec.tenantHostPolicy = deny in the engine');
    await page.locator('#tenantHostPolicy').selectOption('warn');
    await waitFor(async () => (await engine.api('GET', '/settings')).exec.tenantHostPolicy === 'warn', 'exec.tenantHostPolicy = warn again');
    // Host exec's timeout and the credentialed CLIs beside it.
    assert.equal(await page.locator('#hostTimeoutSeconds').inputValue(), String(before.exec.hostTimeoutSeconds));
    await page.locator('#hostTimeoutSeconds').fill('30');
    await page.locator('#hostTimeoutSeconds').dispatchEvent('change');
    await waitFor(async () => (await engine.api('GET', '/settings')).exec.hostTimeoutSeconds === 30, 'exec.hostTimeoutSeconds = 30 in the engine');
    await page.locator('#credentialedCommands').fill('vault, heroku');
    await page.locator('#credentialedCommands').dispatchEvent('change');
    await waitFor(
      async () => (await engine.api('GET', '/settings')).exec.credentialedCommands.join(',') === 'vault,heroku',
      'exec.credentialedCommands = vault, heroku in the engine',
    );
  });

  test('a switch changed elsewhere shows up on the page', async (t) => {
    const page = await open(t);
    if (!page) return;
    const before = await engine.api('GET', '/exec-policy');
    t.after(() => engine.api('PUT', '/exec-policy', before));
    await engine.api('PUT', '/exec-policy', { schedulerScript: !before.schedulerScript });
    await waitFor(
      async () => (await page.locator('[data-switch=schedulerScript] input').isChecked()) === !before.schedulerScript,
      'the page to follow the engine',
    );
  });

  test('defaults: saved through the API, errors next to their field', async (t) => {
    const page = await open(t);
    if (!page) return;
    const before = await engine.api('GET', '/settings');
    t.after(() => engine.api('PUT', '/settings', before));

    await page.locator('#defaultCpus').fill('-1');
    await page.getByRole('button', { name: 'Save defaults' }).click();
    const err = page.locator('[data-field=defaultCpus]');
    await err.waitFor();
    assert.match(await err.innerText(), /defaultCpus/);
    assert.equal((await engine.api('GET', '/settings')).defaultCpus, before.defaultCpus, 'a refused change changed something');

    await page.locator('#defaultCpus').fill(String(before.defaultCpus));
    await page.locator('#allowlist').fill('relative/path');
    await page.getByRole('button', { name: 'Save defaults' }).click();
    await page.locator('[data-field=allowlist]').waitFor();
    assert.match(await page.locator('[data-field=allowlist]').innerText(), /absolute/);

    await page.locator('#allowlist').fill('/usr/share');
    // The mount guard's widening: refused for what is never given.
    await page.locator('#mountAllow').fill('/');
    await page.getByRole('button', { name: 'Save defaults' }).click();
    await page.locator('[data-field=mountAllow]').waitFor();
    assert.match(await page.locator('[data-field=mountAllow]').innerText(), /mountAllow\[0\]/);

    await page.locator('#mountAllow').fill('/srv/www');

    await page.locator('#allowedSockets').fill('/var/run/docker.sock');
    await page.getByRole('button', { name: 'Save defaults' }).click();
    await page.locator('[data-field=allowedSockets]').waitFor();
    assert.match(await page.locator('[data-field=allowedSockets]').innerText(), /container engine/);

    await page.locator('#allowedSockets').fill('/run/postgresql/.s.PGSQL.5432');
    await page.locator('#defaultMemoryMb').fill('1024');
    await page.getByRole('button', { name: 'Save defaults' }).click();
    await waitFor(async () => (await engine.api('GET', '/settings')).defaultMemoryMb === 1024, 'defaultMemoryMb = 1024');
    const saved = await engine.api('GET', '/settings');
    assert.deepEqual(saved.allowlist, ['/usr/share']);
    assert.deepEqual(saved.mountAllow, ['/srv/www']);
    assert.deepEqual(saved.allowedSockets, ['/run/postgresql/.s.PGSQL.5432']);
    assert.equal(saved.defaultCpus, before.defaultCpus, 'an untouched field changed');
    assert.equal(await page.locator('[data-field]').count(), 0, 'an error stayed after a good save');
  });

  test('Start at login writes and removes the autostart entry, shown as it is on disk', async (t) => {
    const page = await open(t);
    if (!page) return;
    // The daemon's XDG_CONFIG_HOME holds the token's folder and the autostart folder.
    const entry = join(dirname(dirname(process.env.SENCLAW_TOKEN_FILE)), 'autostart', 'senclaw.desktop');
    t.after(() => engine.api('PUT', '/autostart', { enabled: false }));
    const box = page.locator('#startAtLogin');
    await box.waitFor();
    assert.equal(await box.isChecked(), false, 'a fresh config starts at login');
    await box.check();
    await waitFor(async () => existsSync(entry), `${entry} to be written`);
    assert.equal((await engine.api('GET', '/autostart')).enabled, true);
    assert.match(readFileSync(entry, 'utf8'), /^Exec=\/.*senclaw$/m);
    rmSync(entry); // removed by hand: the page follows the disk
    await waitFor(async () => !(await box.isChecked()), 'the box to follow the removed entry', 10000);
    await box.check();
    await waitFor(async () => existsSync(entry), 'the entry written again');
    await box.uncheck();
    await waitFor(async () => !existsSync(entry), 'the entry removed');
  });

  test('expand a sandbox, see its process, kill it', async (t) => {
    const sb = await engine.createSandbox('kill-me');
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    await engine.background(sb.id, 'sleep 300');
    const page = await open(t);
    if (!page) return;

    const expander = row(page, 'kill-me').locator('button.expander');
    assert.equal(await expander.getAttribute('aria-expanded'), 'false');
    await expander.focus();
    await page.keyboard.press('Enter');
    assert.equal(await expander.getAttribute('aria-expanded'), 'true');
    const procs = page.locator(`#procs-${sb.id}`);
    const sleepRow = procs.locator('tr[data-pid]', { has: page.locator('code', { hasText: /^sleep 300$/ }) });
    await sleepRow.waitFor({ timeout: 10_000 });
    const pid = Number(await sleepRow.getAttribute('data-pid'));
    assert.ok(pid > 1);
    assert.equal(await procs.locator('svg[role=img]').count(), 2, 'CPU and RAM sparklines');

    await sleepRow.getByRole('button', { name: /Kill/ }).click();
    await procs.locator(`tr[data-pid="${pid}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    const stats = await engine.api('GET', `/sandboxes/${sb.id}/stats`);
    assert.ok(!stats.processes.some((p) => p.pid === pid), 'the killed process is still listed by the engine');
    await screenshot(page, 'after-kill-1024-light');
  });

  test('connections refused by the network rules show in the expanded row', async (t) => {
    const sb = await engine.createSandbox('denied-check', { network: true });
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    // A service on this machine, asked for through the proxy (NO_PROXY would
    // otherwise send it straight to the sandbox's own empty loopback): the
    // proxy refuses it, as there is no loopback rule. Nothing leaves.
    const res = await engine.api('POST', `/sandboxes/${sb.id}/run`, {
      env: { NO_PROXY: '', no_proxy: '' },
      language: 'python',
      code: [
        'import urllib.request',
        "opener = urllib.request.build_opener(urllib.request.ProxyHandler({'http': 'http://127.0.0.1:3128'}))",
        'try:',
        "    opener.open('http://127.0.0.1:9/', timeout=5)",
        'except Exception as e:',
        '    print(e)',
      ].join('\n'),
    });
    assert.match(res.stdout, /403/, 'the proxy should refuse a local service');
    await engine.background(sb.id, 'sleep 300');
    const page = await open(t);
    if (!page) return;
    await row(page, 'denied-check').locator('button.expander').click();
    const line = page.locator(`#procs-${sb.id} [data-testid=denied]`);
    await line.waitFor({ timeout: 10_000 });
    assert.match(await line.innerText(), /1 connection refused by the network rules: 127\.0\.0\.1/);
  });

  test('Stop all stops every sandboxed process', async (t) => {
    const a = await engine.createSandbox('stop-all-a');
    const b = await engine.createSandbox('stop-all-b');
    t.after(async () => {
      await engine.api('DELETE', `/sandboxes/${a.id}?purge=true`);
      await engine.api('DELETE', `/sandboxes/${b.id}?purge=true`);
    });
    await engine.background(a.id, 'sleep 300');
    await engine.background(b.id, 'sleep 300');
    const page = await open(t);
    if (!page) return;
    await row(page, 'stop-all-a').locator('.badge', { hasText: 'running' }).waitFor();

    await page.getByRole('button', { name: 'Stop all' }).click();
    await waitFor(async () => {
      const { sandboxes } = await engine.api('GET', '/sandboxes');
      return sandboxes.filter((s) => s.id === a.id || s.id === b.id).every((s) => s.state !== 'running');
    }, 'both sandboxes to stop');
    await row(page, 'stop-all-a').locator('.badge', { hasText: 'idle' }).waitFor();
    await row(page, 'stop-all-b').locator('.badge', { hasText: 'idle' }).waitFor();
  });

  test('Stop stops one sandbox', async (t) => {
    const sb = await engine.createSandbox('stop-one');
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    await engine.background(sb.id, 'sleep 300');
    const page = await open(t);
    if (!page) return;
    const r = row(page, 'stop-one');
    await r.locator('.badge', { hasText: 'running' }).waitFor();
    await r.getByRole('button', { name: 'Stop', exact: true }).click();
    await r.locator('.badge', { hasText: 'idle' }).waitFor();
    assert.notEqual((await engine.api('GET', `/sandboxes/${sb.id}`)).state, 'running');
  });

  test('a docker sandbox offers Stop container', async (t) => {
    const caps = await engine.api('GET', '/caps');
    const docker = caps.backends.find((b) => b.backend === 'docker');
    if (docker?.state !== 'healthy') return t.skip('no Docker daemon answers here');
    const sb = await engine.createSandbox('docker-label', { backend: 'docker' });
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    const page = await open(t);
    if (!page) return;
    await row(page, 'docker-label').getByRole('button', { name: 'Stop container' }).waitFor();
    assert.equal(await row(page, 'docker-label').getByRole('button', { name: 'Stop', exact: true }).count(), 0);
    const read = row(page, 'docker-label').locator('td[data-label="Read"]');
    assert.match(await read.innerText(), /image \+ mounts/, 'the fs mode does not apply to a container, and the row says so');
  });

  test('Delete with files asks first, naming the sandbox, then removes it', async (t) => {
    const sb = await engine.createSandbox('purge-me');
    await engine.api('PUT', `/sandboxes/${sb.id}/file`, { path: 'keep.txt', content: 'x' }).catch(() => {});
    assert.ok(existsSync(sb.workspace), 'the workspace exists');
    const page = await open(t);
    if (!page) return;

    const dialog = page.getByTestId('purge-dialog');
    await row(page, 'purge-me').getByRole('button', { name: 'Delete with files' }).click();
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.match(text, /purge-me/);
    assert.ok(text.includes(sb.workspace), 'the dialog names the workspace path');
    await screenshot(page, 'purge-dialog-1024-light');

    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await engine.call('GET', `/sandboxes/${sb.id}`))[0], 200, 'Cancel deleted the sandbox');

    await row(page, 'purge-me').getByRole('button', { name: 'Delete with files' }).click();
    await dialog.getByRole('button', { name: 'Delete with files' }).click();
    await row(page, 'purge-me').waitFor({ state: 'detached' });
    assert.equal((await engine.call('GET', `/sandboxes/${sb.id}`))[0], 404);
    assert.ok(!existsSync(sb.workspace), 'the workspace is still on disk');
  });

  test('Delete (keep files) keeps the workspace', async (t) => {
    const sb = await engine.createSandbox('delete-keep');
    const page = await open(t);
    if (!page) return;
    await row(page, 'delete-keep').getByRole('button', { name: 'Delete (keep files)' }).click();
    await row(page, 'delete-keep').waitFor({ state: 'detached' });
    assert.equal((await engine.call('GET', `/sandboxes/${sb.id}`))[0], 404);
    assert.ok(existsSync(sb.workspace), 'the workspace was removed');
  });

  test('a traced run shows what it did', async (t) => {
    const sb = await engine.createSandbox('traced-run');
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    await engine.api('POST', `/sandboxes/${sb.id}/trace`, { enabled: true });
    const run = (await engine.api('POST', `/sandboxes/${sb.id}/exec`, { command: 'echo x > made-by-run.txt; touch /etc/refused-by-sandbox 2>/dev/null; true' })).run;
    const page = await open(t);
    if (!page) return;
    const r = page.locator(`tr[data-run="${run.id}"]`);
    await r.waitFor();
    await r.locator('button.expander').click();
    const what = page.locator(`#out-${run.id} [data-testid=run-events]`);
    await what.waitFor({ timeout: 10_000 });
    const text = await what.innerText();
    assert.match(text, /from outside the sandbox/);
    assert.match(text, /Files written[\s\S]*made-by-run\.txt/);
    assert.match(text, /Processes started[\s\S]*touch/);
    assert.match(text, /Refused by the sandbox[\s\S]*\/etc\/refused-by-sandbox/);
  });

  test('recent runs: isolation, refusals in red, output on click', async (t) => {
    const sb = await engine.createSandbox('runs-check');
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    const ok = (await engine.api('POST', `/sandboxes/${sb.id}/exec`, { command: 'echo hello-from-run; echo oops >&2; exit 3' })).run;
    const policy = await engine.api('GET', '/exec-policy');
    await engine.api('PUT', '/exec-policy', { runPython: false });
    const [status, refusedBody] = await engine.call('POST', '/run-once', { language: 'python', code: 'print(1)' });
    await engine.api('PUT', '/exec-policy', policy);
    assert.equal(status, 403);
    const refused = refusedBody.run;

    const page = await open(t);
    if (!page) return;
    const okRow = page.locator(`tr[data-run="${ok.id}"]`);
    await okRow.waitFor();
    assert.match(await okRow.innerText(), /bwrap/);
    assert.match(await okRow.innerText(), /\b3\b/);
    const refCell = page.locator(`tr[data-run="${refused.id}"] td.refused`);
    await refCell.waitFor();
    assert.match(await refCell.innerText(), /^refused: /);
    const color = await refCell.evaluate((el) => getComputedStyle(el).color);
    assert.equal(color, 'rgb(179, 38, 30)', 'a refusal is red');

    const btn = okRow.locator('button.expander');
    await btn.click();
    assert.equal(await btn.getAttribute('aria-expanded'), 'true');
    const out = page.locator(`#out-${ok.id}`);
    await out.getByText('hello-from-run').waitFor();
    assert.match(await out.innerText(), /oops/);
  });

  test("secrets: added, used by a sandbox, removed, never shown; a run's refusals", async (t) => {
    const page = await open(t);
    if (!page) return;
    const value = 'dashboard-secret-value-' + Date.now();
    t.after(() => engine.call('DELETE', '/secrets/ghdash'));
    await page.locator('#secret-name').fill('ghdash');
    await page.locator('#secret-hosts').fill('api.github.com, uploads.github.com');
    await page.locator('#secret-header').fill('Authorization');
    await page.locator('#secret-format').fill('Bearer {}');
    await page.locator('#secret-value').fill(value);
    await page.getByRole('button', { name: 'Add secret' }).click();
    const row = page.locator('tr[data-secret=ghdash]');
    await row.waitFor();
    assert.match(await row.innerText(), /api\.github\.com, uploads\.github\.com/);
    assert.match(await row.innerText(), /Authorization: Bearer \{\}/);
    assert.equal(await page.locator('#secret-value').inputValue(), '', 'the value stays in the form');
    assert.ok(!(await page.content()).includes(value), 'the page holds the value');
    assert.ok(!JSON.stringify(await engine.api('GET', '/secrets')).includes(value), 'the API answered the value');

    // A bad one: the error is next to its field.
    await page.locator('#secret-name').fill('Bad Name');
    await page.locator('#secret-hosts').fill('x.test');
    await page.locator('#secret-value').fill('v');
    await page.getByRole('button', { name: 'Add secret' }).click();
    await page.locator('.secrets [data-field=name]').waitFor();

    // A sandbox that asks for it shows in its row; a run there that was
    // refused a connection lists it, with how to allow it.
    const sb = await engine.createSandbox('uses-ghdash', { secrets: ['ghdash'], network: true });
    t.after(() => engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`));
    const run = (await engine.api('POST', `/sandboxes/${sb.id}/exec`, { command: 'echo "$GHDASH" | cut -c1-16; env -u NO_PROXY -u no_proxy curl -s -m 5 -o /dev/null http://127.0.0.1:9/; true' })).run;
    assert.equal(run.stdout.trim(), '<senclaw-secret:');
    assert.equal(run.refusals?.[0]?.kind, 'connect');
    await page.reload();
    await waitFor(async () => /uses-ghdash/.test(await page.locator('tr[data-secret=ghdash] [data-testid=secret-used-by]').innerText()), 'the sandbox in Used by');
    const runRow = page.locator(`tr[data-run="${run.id}"]`);
    await runRow.waitFor();
    assert.match(await runRow.locator('[data-testid=run-refused]').innerText(), /1 refused/);
    await runRow.locator('button.expander').click();
    const list = page.locator(`#out-${run.id} [data-testid=run-refusals]`);
    await list.waitFor();
    assert.match(await list.innerText(), /connect\s+127\.0\.0\.1:9/);
    assert.match(await list.innerText(), /To allow it: add 9 to the sandbox's loopback ports/);

    page.once('dialog', (d) => d.accept());
    await page.locator('tr[data-secret=ghdash]').getByRole('button', { name: 'Remove secret ghdash' }).click();
    await page.locator('tr[data-secret=ghdash]').waitFor({ state: 'detached' });
    assert.deepEqual((await engine.api('GET', '/secrets')).secrets.map((s) => s.name), []);
  });

  test("the session id is out of the page's reach", async (t) => {
    const page = await open(t);
    if (!page) return;
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'senclaw_session');
    assert.ok(session, 'the login set a session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    const seen = await page.evaluate(() => ({ cookie: document.cookie, html: document.documentElement.outerHTML }));
    assert.ok(!seen.cookie.includes(session.value), 'document.cookie shows the session');
    assert.ok(!seen.html.includes(session.value), 'the page holds the session id');
    // The page's token alone, without the cookie, gets nothing.
    const token = await page.evaluate(() => document.querySelector('meta[name="senclaw-token"]').content);
    const res = await fetch(engine.baseUrl + '/api/sandbox/status', { headers: { Authorization: 'Bearer ' + token } });
    assert.equal(res.status, 401);
  });

  test('screenshots: light and dark, 1024x768 and narrow', async (t) => {
    if (!ready) return t.skip('no setup');
    const sb = await engine.createSandbox('screenshot-demo', { network: true, timeoutMs: 300_000 });
    t.after(async () => {
      await engine.api('POST', `/sandboxes/${sb.id}/stop`);
      await engine.api('DELETE', `/sandboxes/${sb.id}?purge=true`);
    });
    // A few seconds of CPU, for the sparkline, then a process to list.
    await engine.background(sb.id, 'timeout 6 sh -c "while :; do :; done"; sleep 300');
    for (const colorScheme of ['light', 'dark']) {
      for (const [width, height] of [
        [1024, 768],
        [400, 800],
      ]) {
        const page = await open(t, { width, height, colorScheme });
        await row(page, 'screenshot-demo').locator('button.expander').click();
        await page
          .locator(`#procs-${sb.id} tr[data-pid]`)
          .first()
          .waitFor({ timeout: 10_000 })
          .catch(async (err) => {
            const stats = await engine.api('GET', `/sandboxes/${sb.id}/stats`);
            const shown = await page.locator(`#procs-${sb.id}`).innerText().catch(() => '(no detail row)');
            throw new Error(`${err.message}\nengine stats: ${JSON.stringify(stats)}\npage: ${shown}`);
          });
        await page.waitForTimeout(2500); // a few points of history for the sparklines
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `${width}px ${colorScheme}: the page is ${overflow}px wider than the window`);
        await screenshot(page, `dashboard-${width}-${colorScheme}`);
        if (width < 1024) {
          // The full narrow page is too tall to look at in one image.
          await page.locator('[data-card=sandboxes]').screenshot({ path: `${ARTIFACTS}/dashboard-${width}-${colorScheme}-sandboxes.png` });
          await page.evaluate(() => window.scrollTo(0, 0));
          await page.screenshot({ path: `${ARTIFACTS}/dashboard-${width}-${colorScheme}-top.png` });
        }
      }
    }
  });
});
