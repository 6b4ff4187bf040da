// The Scheduled scripts card against real daemons: a schedule of the main
// daemon (real bwrap) is paused, resumed and run from the page, and its
// row opens the run's output; on a daemon with nothing that can isolate,
// a run with the Scheduler scripts switch on is refused, shown in red.
// Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Engine, launch, openDashboard, requireSetup, screenshot, startDaemon, waitFor } from './helpers.mjs';

describe('scheduled scripts', { concurrency: false }, () => {
  let engine;
  let browser;
  let ready = false;

  before(async (t) => {
    if (!requireSetup(t)) return;
    engine = Engine.main();
    engine.firstLogin = ''; // the dashboard tests used the one-time link already
    browser = await launch();
    ready = true;
  });

  after(async () => {
    await browser?.close();
  });

  async function open(t, e) {
    if (!ready) return t.skip('no setup'), null;
    const session = await openDashboard(browser, e);
    t.after(async () => {
      assert.deepEqual(session.problems, [], 'the page logged errors');
      await session.context.close();
    });
    return session.page;
  }

  const row = (page, name) => page.locator(`tr.sch-row[data-name="${name}"]`);

  test('pause, resume, run now and the output, sandboxed', async (t) => {
    if (!ready) return t.skip('no setup');
    const before = await engine.api('GET', '/exec-policy');
    await engine.api('PUT', '/exec-policy', { schedulerScript: true });
    t.after(() => engine.api('PUT', '/exec-policy', { schedulerScript: before.schedulerScript }));
    const { schedule } = await engine.api('POST', '/schedules', {
      name: 'card-check',
      cron: '0 0 1 1 *',
      timeZone: 'UTC',
      code: 'echo from-the-card; id -un 2>/dev/null || true',
    });
    t.after(() => engine.api('DELETE', `/schedules/${schedule.id}`));
    const page = await open(t, engine);
    if (!page) return;

    const r = row(page, 'card-check');
    await r.waitFor({ timeout: 5000 });
    const when = await r.getByTestId('when').innerText();
    assert.match(when, /on the 1st of the month in January at 00:00/);
    assert.match(when, /0 0 1 1 \*/);
    assert.match(when, /UTC/);
    assert.match(await r.getByTestId('next').innerText(), /^in \d+ (days|h)$/);
    assert.match(await r.getByTestId('last').innerText(), /not yet/);

    await r.getByRole('button', { name: 'Pause' }).click();
    await waitFor(async () => (await engine.api('GET', `/schedules/${schedule.id}`)).paused === true, 'the pause to reach the engine');
    await r.getByTestId('next').getByText('paused').waitFor({ timeout: 5000 });
    await r.getByRole('button', { name: 'Resume' }).click();
    await waitFor(async () => (await engine.api('GET', `/schedules/${schedule.id}`)).paused === false, 'the resume to reach the engine');
    await r.getByRole('button', { name: 'Pause' }).waitFor({ timeout: 5000 });

    await r.getByRole('button', { name: 'Run now' }).click();
    await waitFor(async () => /ok, exit 0, bwrap/.test(await r.getByTestId('last').innerText()), 'the run to show ok in bwrap', 20_000);
    const [run] = (await engine.api('GET', '/runs?source=scheduler&limit=1')).runs;
    assert.equal(run.scheduleId, schedule.id);
    assert.equal(run.isolation, 'bwrap');

    await r.getByRole('button', { name: /card-check/ }).click();
    const out = page.locator(`#sch-${schedule.id} [data-testid=run-output]`);
    await out.waitFor({ timeout: 5000 });
    await waitFor(async () => /from-the-card/.test(await out.innerText()), 'the run output in the row');
    assert.match(await page.locator(`#sch-${schedule.id} tr.firing`).first().innerText(), /manual/);
    // The Recent runs card lists it with source scheduler.
    await waitFor(async () => /scheduler/.test(await page.locator(`tr[data-run="${run.id}"]`).innerText()), 'the run in Recent runs');
    await screenshot(page, 'schedules-card');
  });

  test('a refusal for lack of isolation is shown in red', async (t) => {
    if (!ready) return t.skip('no setup');
    const daemon = await startDaemon({
      name: 'sched-degraded',
      // Landlock needs nothing on PATH: only bwrap and Docker are offered.
      env: { PATH: '/nonexistent', DOCKER_HOST: 'unix:///nonexistent/docker.sock', DOCKER_CONTEXT: '', SENCLAW_BACKENDS: 'bwrap,docker,direct' },
    });
    await daemon.engine.api('PUT', '/exec-policy', { schedulerScript: true });
    const { schedule } = await daemon.engine.api('POST', '/schedules', { name: 'nothing-isolates', cron: '@daily', code: 'echo never' });
    const page = await open(t, daemon.engine);
    // After hooks run in order: the page closes (and its problems are
    // checked) before its daemon stops under it.
    t.after(() => daemon.stop());
    if (!page) return;
    const r = row(page, 'nothing-isolates');
    await r.waitFor({ timeout: 5000 });
    await r.getByRole('button', { name: 'Run now' }).click();
    const last = r.getByTestId('last');
    await waitFor(async () => /refused, refused: no isolation/.test(await last.innerText()), 'the refusal in the row', 15_000);
    assert.equal(await last.evaluate((el) => el.classList.contains('refused')), true);
    const color = await last.evaluate((el) => getComputedStyle(el).color);
    const bad = await page.evaluate(() => {
      const probe = document.createElement('span');
      probe.style.color = 'var(--bad)';
      document.body.append(probe);
      const c = getComputedStyle(probe).color;
      probe.remove();
      return c;
    });
    assert.equal(color, bad, 'a refused run is shown in the red of refusals');
    const h = await daemon.engine.api('GET', `/schedules/${schedule.id}/history`);
    assert.equal(h.history[0].outcome, 'refused');
    await screenshot(page, 'schedules-refused');
  });
});
