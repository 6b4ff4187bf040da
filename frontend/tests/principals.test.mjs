// Principals on the owner's dashboard, against the main daemon: the
// refusals of an agent token, a tenant's token and a token nobody has are
// recorded and shown on the Security events card (the last 50, narrowed by
// principal and by kind, live), and every card that lists objects has a
// Tenant column and filter once tenants exist; the Isolation card says
// when the LAN listener is on. Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Engine, launch, openDashboard, requireSetup, screenshot, startDaemon, waitFor } from './helpers.mjs';

describe('principals', { concurrency: false }, () => {
  let engine;
  let browser;
  let ready = false;
  const cleanups = [];

  before(async (t) => {
    if (!requireSetup(t)) return;
    engine = Engine.main();
    engine.firstLogin = ''; // the dashboard tests used the one-time link already
    browser = await launch();
    ready = true;
  });

  after(async () => {
    for (const undo of cleanups.reverse()) await undo().catch(() => {});
    await browser?.close();
  });

  /** as is a client of the main daemon acting with token tok. */
  const as = (tok) => new Engine(engine.baseUrl, tok);

  async function tenant(name) {
    const added = await engine.api('POST', '/tenants', { name, tools: null });
    cleanups.push(() => engine.api('DELETE', `/tenants/${name}?purge=true`));
    return as(added.token.secret);
  }

  test('refusals are security events on the card, narrowed and live', async (t) => {
    if (!ready) return t.skip('no setup');
    const acme = await tenant('acme');
    const globex = await tenant('globex');
    const issued = await engine.api('POST', '/tokens', { name: 'card-bot', tools: ['sbx_run'] });
    cleanups.push(() => engine.api('DELETE', '/tokens/card-bot'));
    const bot = as(issued.secret);
    const mine = (await acme.api('POST', '/sandboxes', { name: 'acme-work' })).sandbox;
    const theirs = (await globex.api('POST', '/sandboxes', { name: 'globex-work' })).sandbox;
    cleanups.push(() => engine.api('DELETE', `/sandboxes/${mine.id}?purge=true`), () => engine.api('DELETE', `/sandboxes/${theirs.id}?purge=true`));
    await acme.api('POST', `/sandboxes/${mine.id}/exec`, { command: 'echo acme-ran' });

    // The refusals: a scope, a tool policy, another tenant's id, a token
    // nobody has. Each answer says why; none did anything.
    assert.equal((await bot.call('PUT', '/exec-policy', { runPython: false }))[0], 403);
    assert.equal((await bot.call('GET', '/sandboxes'))[0], 403);
    assert.equal((await acme.call('GET', `/sandboxes/${theirs.id}`))[0], 404);
    assert.equal((await as('sclw_nobody_x').call('GET', '/status'))[0], 401);

    const session = await openDashboard(browser, engine);
    t.after(async () => {
      assert.deepEqual(session.problems, [], 'the page logged errors');
      await session.context.close();
    });
    const page = session.page;
    const card = page.locator('[data-card="security-events"]');
    const kinds = async () => card.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.kind));
    await waitFor(async () => {
      const k = await kinds();
      return ['security.scope_denied', 'security.tool_policy_denied', 'security.cross_tenant_denied', 'security.token_rejected'].every((x) => k.includes(x));
    }, 'the four refusals on the card');
    const cross = card.locator('tr[data-kind="security.cross_tenant_denied"]').first();
    assert.match(await cross.innerText(), /tenant:acme/);
    assert.match(await cross.innerText(), new RegExp(`/api/sandbox/sandboxes/${theirs.id}`));
    await screenshot(page, 'security-events');

    // Narrowed by principal, then by kind, on the engine's side.
    await card.getByTestId('security-principal').selectOption('agent:card-bot');
    await waitFor(async () => {
      const cells = await card.getByTestId('security-principal-cell').allInnerTexts();
      return cells.length >= 2 && cells.every((c) => c.startsWith('agent:card-bot'));
    }, 'only the bot’s events');
    await card.getByTestId('security-kind').selectOption('security.tool_policy_denied');
    await waitFor(async () => {
      const k = await kinds();
      return k.length >= 1 && k.every((x) => x === 'security.tool_policy_denied');
    }, 'only the bot’s tool policy refusals');
    await card.getByTestId('security-kind').selectOption('');
    await card.getByTestId('security-principal').selectOption('');

    // Live: a refusal made while the page is open shows within a poll.
    const before = await card.locator('tbody tr').count();
    assert.equal((await globex.call('DELETE', `/sandboxes/${mine.id}`))[0], 404);
    await waitFor(async () => {
      const first = card.locator('tbody tr').first();
      return (await first.getAttribute('data-kind')) === 'security.cross_tenant_denied' && /tenant:globex/.test(await first.innerText());
    }, 'the new refusal at the top', 8000);
    assert.ok((await card.locator('tbody tr').count()) >= Math.min(before + 1, 50));

    // The Tenant column and filter on the cards that list objects.
    const sandboxes = page.locator('[data-card="sandboxes"]');
    await waitFor(async () => (await sandboxes.getByTestId('tenant-cell').allInnerTexts()).some((c) => c.includes('acme')), 'the Tenant column of the sandboxes');
    const tenantOf = async (name) => sandboxes.locator(`tr.sb-row[data-name="${name}"]`).getByTestId('tenant-cell').innerText();
    assert.equal((await tenantOf('acme-work')).trim(), 'acme');
    assert.equal((await tenantOf('globex-work')).trim(), 'globex');
    await sandboxes.getByTestId('sandboxes-tenant').selectOption('acme');
    await waitFor(async () => {
      const names = await sandboxes.locator('tr.sb-row').evaluateAll((rows) => rows.map((r) => r.dataset.name));
      return names.length === 1 && names[0] === 'acme-work';
    }, 'only acme’s sandboxes');
    const runs = page.locator('[data-card="runs"]');
    await runs.getByTestId('runs-tenant').selectOption('acme');
    await waitFor(async () => {
      const cells = await runs.getByTestId('tenant-cell').allInnerTexts();
      return cells.length >= 1 && cells.every((c) => c.trim() === 'acme');
    }, 'only acme’s runs');
    for (const id of ['schedules-tenant', 'apps-tenant']) {
      assert.equal(await page.getByTestId(id).count(), 1, `the ${id} filter`);
    }
    await screenshot(page, 'tenant-filter');
  });

  /** freePort is a TCP port nobody listens on now. */
  async function freePort() {
    const srv = createServer();
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address();
    await new Promise((r) => srv.close(r));
    return port;
  }

  /** dummyAddress puts addr (TEST-NET-2: never a real LAN's) on a link
   * of this machine that goes nowhere (a dummy one, or a veth pair where
   * the kernel has no dummy links), for a LAN listener no other machine
   * reaches, and returns what removes it. */
  function dummyAddress(addr) {
    const dev = `sclanui${process.pid % 1000}`;
    const ip = (...args) => spawnSync('ip', args, { encoding: 'utf8' });
    ip('link', 'del', dev);
    let link = ['link', 'add', dev, 'type', 'dummy'];
    if (ip(...link).status === 0) ip('link', 'del', dev);
    else link = ['link', 'add', dev, 'type', 'veth', 'peer', 'name', dev + 'p'];
    for (const args of [link, ['addr', 'add', addr + '/32', 'dev', dev], ['link', 'set', dev, 'up']]) {
      const r = ip(...args);
      if (r.status !== 0) {
        ip('link', 'del', dev);
        throw new Error(`ip ${args.join(' ')}: ${r.error?.message ?? ''} ${r.stderr}`);
      }
    }
    return () => ip('link', 'del', dev);
  }

  test('the Isolation card says when the LAN listener is on', async (t) => {
    if (!ready) return t.skip('no setup');
    // Off by default: the main daemon has none, and the card says nothing.
    const main = await openDashboard(browser, engine);
    await main.page.locator('[data-card=isolation] .overall').waitFor();
    assert.equal(await main.page.getByTestId('lan-listener').count(), 0, 'a LAN listener shown on a daemon without one');
    await main.context.close();

    const addr = '198.51.100.78';
    const undo = dummyAddress(addr);
    t.after(undo);
    const daemon = await startDaemon({ name: 'lan' });
    // The page is closed before the daemon stops (below): a poll of a
    // daemon gone would log a refused connection as the page's error.
    let session;
    t.after(async () => {
      const problems = session ? session.problems.slice() : [];
      try {
        await session?.context.close();
      } finally {
        await daemon.stop();
      }
      assert.deepEqual(problems, [], 'the page logged errors');
    });
    const lan = `${addr}:${await freePort()}`;
    await daemon.engine.api('PUT', '/settings', { lanListen: lan });
    await daemon.down();
    await daemon.up(); // the setting takes effect at the next start
    const status = await daemon.engine.api('GET', '/status');
    assert.equal(status.lan?.url, `https://${lan}`);
    assert.match(status.lan?.fingerprint ?? '', /^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/i);

    session = await openDashboard(browser, daemon.engine);
    const note = session.page.locator('[data-card=isolation]').getByTestId('lan-listener');
    await note.waitFor();
    const text = await note.innerText();
    assert.match(text, /LAN listener on/);
    assert.ok(text.includes(status.lan.url), `the card names ${status.lan.url}: ${text}`);
    assert.ok(text.includes(status.lan.fingerprint), `the card shows the fingerprint: ${text}`);
    assert.match(text, /agent and tenant tokens only/);
    await screenshot(session.page, 'lan-listener');
  });
});
