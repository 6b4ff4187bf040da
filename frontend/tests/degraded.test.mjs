// A daemon whose only isolating backend is unusable (bwrap not on PATH)
// is degraded: the page says so plainly, and warns that switched-on paths
// will fail rather than run unsandboxed.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launch, openDashboard, requireSetup, screenshot, startDaemon } from './helpers.mjs';

let daemon;
let browser;

before(async (t) => {
  if (!requireSetup(t)) return;
  // An absolute path to the binary and a PATH with nothing on it: the bwrap
  // backend cannot find bwrap. Docker, when this machine has it, is pointed
  // at a socket that does not exist. Landlock, a kernel feature this
  // machine has, is left out of the engine's backends, as on a kernel
  // without it. Nothing can isolate.
  daemon = await startDaemon({
    name: 'degraded',
    env: {
      PATH: '/nonexistent',
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
      DOCKER_CONTEXT: '',
      SENCLAW_BACKENDS: 'bwrap,docker,direct',
    },
  });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

test('a degraded engine shows the banner', async (t) => {
  if (!daemon) return t.skip('no setup');
  const caps = await daemon.engine.api('GET', '/caps');
  assert.equal(caps.state, 'degraded', 'the second daemon should be degraded: ' + caps.summary);
  assert.ok(caps.backends.filter((b) => b.isolates).every((b) => b.state !== 'healthy'));

  for (const [width, colorScheme] of [
    [1024, 'light'],
    [400, 'dark'],
  ]) {
    const { page, context, problems } = await openDashboard(browser, daemon.engine, { width, colorScheme });
    const banner = page.getByTestId('degraded-banner');
    await banner.waitFor();
    const text = await banner.innerText();
    assert.match(text, /Degraded/);
    assert.match(text, /no operating-system barrier/i);
    assert.match(text, /refused/);
    assert.equal(await page.locator('.overall[data-state=degraded]').count(), 1);
    assert.match(await page.locator('[data-backend=bwrap]').innerText(), /not available|gone/);
    if (caps.backends.some((b) => b.backend === 'docker')) {
      assert.match(await page.locator('[data-backend=docker]').innerText(), /not answering/);
    }

    // Run Python is on by default: with nothing to isolate, its runs fail.
    const policy = await daemon.engine.api('GET', '/exec-policy');
    assert.equal(policy.runPython, true);
    const warn = page.locator('[data-switch=runPython] [data-testid=switch-degraded]');
    await warn.waitFor();
    assert.match(await warn.innerText(), /will fail/);
    // Agent shell is off by default: no warning there.
    assert.equal(await page.locator('[data-switch=execShell] [data-testid=switch-degraded]').count(), 0);
    await screenshot(page, `degraded-${width}-${colorScheme}`);
    assert.deepEqual(problems, []);
    await context.close();
  }
});
