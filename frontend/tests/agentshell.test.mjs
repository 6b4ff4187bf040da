// The Agent shell switch as a person sees it: with Claude Code integrated
// (its user settings hold senclaw's hook) the Security enforcement card
// names it next to the switch, and the agent's commands show in Recent
// runs with their source and isolation; switched off, they say none.
// The card's shell guard line, and a group switched off from it.
// Run through scripts/test-browser.sh.

import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launch, openDashboard, requireSetup, screenshot, startDaemon, tempDir, waitFor } from './helpers.mjs';

let daemon;
let browser;
let home;

before(async (t) => {
  if (!requireSetup(t)) return;
  home = tempDir('senclaw-home-');
  mkdirSync(join(home, '.claude'));
  const hook = { type: 'command', command: `'${process.env.SENCLAW_BIN}' hook claude-code`, timeout: 30 };
  writeFileSync(join(home, '.claude', 'settings.json'), JSON.stringify({ model: 'opus', hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [hook] }] } }, null, 2));
  daemon = await startDaemon({ name: 'agentshell', env: { HOME: home } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

test('the enforcement card names the integrated agent and Recent runs shows its commands', async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  const project = tempDir('senclaw-project-');
  const { page, context, problems } = await openDashboard(browser, engine);
  t.after(() => context.close());

  const card = page.locator('[data-card=enforcement] [data-part=integrations]');
  await card.locator('[data-agent=claude-code]').waitFor({ timeout: 10_000 });
  assert.match(await card.innerText(), /Governs Claude Code: every project/);
  // How to add another, in the agent shell's settings.
  const settings = page.locator('[data-card=enforcement] [data-part=shell-settings]');
  await settings.locator('summary').click();
  assert.match(await settings.innerText(), /senclaw integrate gemini-cli/);

  for (const on of [true, false]) {
    await engine.api('PUT', '/exec-policy', { execShell: on });
    const res = await engine.api('POST', '/agent-shell', { projectDir: project, command: `echo switch-${on}`, agent: 'claude-code' });
    const row = page.locator(`tr[data-run="${res.run.id}"]`);
    await row.waitFor({ timeout: 10_000 });
    const text = await row.innerText();
    assert.match(text, /agent-shell \(claude-code\)/);
    assert.match(text, on ? /bwrap/ : /\bnone\b/);
  }
  await waitFor(async () => (await page.locator('tr.sb-row').count()) >= 1, 'the agent sandbox in Managed sandboxes');
  assert.match(await page.locator('[data-card=sandboxes]').innerText(), /agent:senclaw-project-/);
  await screenshot(page, 'agent-shell');
  assert.deepEqual(problems, [], 'the page logged errors');
});

test('the enforcement card shows the shell guard, and a group switched off there lets the command run', async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  const project = tempDir('senclaw-project-');
  await engine.api('PUT', '/exec-policy', { execShell: false });
  const { page, context, problems } = await openDashboard(browser, engine);
  t.after(() => context.close());

  const guard = page.locator('[data-card=enforcement] [data-part=shell-guard]');
  await guard.waitFor({ timeout: 10_000 });
  assert.match(await guard.locator('summary').innerText(), /Shell guard: 7 of 7 groups on; on the host it refuses a match, in a sandbox it warns/);

  // On the host path a dump of the environment is refused, and the run
  // says by which group.
  const [status, refused] = await engine.call('POST', '/agent-shell', { projectDir: project, command: 'printenv' });
  assert.equal(status, 403);
  assert.match(refused.error, /shell guard: envDump: .*printenv.*guard\.envDump/);
  assert.equal(refused.run.isolation, 'refused: shell guard: envDump');
  const row = page.locator(`tr[data-run="${refused.run.id}"]`);
  await row.waitFor({ timeout: 10_000 });
  assert.match(await row.innerText(), /shell guard: envDump/);

  await guard.locator('summary').click();
  await guard.locator('[data-group=envDump] input').uncheck();
  await waitFor(async () => (await engine.api('GET', '/settings')).guard.envDump === false, 'envDump off in the settings');
  await waitFor(async () => /6 of 7 groups on/.test(await guard.locator('summary').innerText()), 'the summary counting 6');
  const ran = await engine.api('POST', '/agent-shell', { projectDir: project, command: 'printenv' });
  assert.equal(ran.run.isolation, 'none');
  await guard.locator('#guard-sandbox').selectOption('deny');
  await waitFor(async () => (await engine.api('GET', '/settings')).guard.sandbox === 'deny', 'guard.sandbox deny');
  await screenshot(page, 'shell-guard');
  assert.deepEqual(problems, [], 'the page logged errors');
});

test("an agent sandbox's row shows its project's effective policy, each value with its file", async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  const project = tempDir('senclaw-policy-');
  mkdirSync(join(project, '.senclaw'));
  // Asks to read the whole disk (the owner's agent shell reads less: ignored)
  // and for fewer processes (kept).
  writeFileSync(join(project, '.senclaw', 'policy.json'), JSON.stringify({ fsMode: 'open', limits: { pids: 64 } }));
  await engine.api('PUT', '/exec-policy', { execShell: true, execFsMode: 'strict' });
  const res = await engine.api('POST', '/agent-shell', { projectDir: project, command: 'true', agent: 'claude-code' });
  assert.equal(res.run.isolation, 'bwrap');
  const { page, context, problems } = await openDashboard(browser, engine);
  t.after(() => context.close());
  const row = page.locator('tr.sb-row', { hasText: 'agent:senclaw-policy-' });
  await row.locator('button.expander').click();
  const box = page.getByTestId('effective-policy');
  await box.locator('tr[data-key=fsMode]').waitFor({ timeout: 10_000 });
  assert.match(await box.locator('tr[data-key=fsMode]').innerText(), /strict\s+owner/);
  assert.match(await box.locator('tr[data-key="limits.pids"]').innerText(), /64\s+project/);
  assert.match(await box.getByTestId('policy-notes').innerText(), /fsMode "open" ignored/);

  // Propose a policy: a learn run of a command that only writes the
  // project proposes strict reads and no network, as a diff; Apply saves
  // it and the table shows the project's values.
  chmodSync(project, 0o777); // a traced run of a root engine binds no idmapped mount
  const propose = box.getByTestId('propose-policy');
  await propose.locator('summary').click();
  await propose.locator('input').fill('echo learned > learned.txt');
  await propose.getByRole('button', { name: 'Learn' }).click();
  const diff = propose.getByTestId('proposal-diff');
  await diff.waitFor({ timeout: 30_000 });
  assert.match(await diff.innerText(), /- fsMode: "open"\s+\+ fsMode: "strict"/);
  await propose.getByRole('button', { name: 'Apply' }).click();
  await propose.getByTestId('proposal-applied').waitFor({ timeout: 10_000 });
  assert.match(readFileSync(join(project, '.senclaw', 'policy.json'), 'utf8'), /"fsMode": "strict"/);
  await waitFor(async () => /strict\s+project/.test(await box.locator('tr[data-key=fsMode]').innerText()), 'fsMode from the project after Apply');
  await screenshot(page, 'effective-policy');
  assert.deepEqual(problems, [], 'the page logged errors');
});

test("Recent runs proposes a policy from a project's run, its command filled in", async (t) => {
  if (!daemon) return t.skip('no setup');
  const { engine } = daemon;
  const project = tempDir('senclaw-learnrun-');
  chmodSync(project, 0o777); // a traced run of a root engine binds no idmapped mount
  await engine.api('PUT', '/exec-policy', { execShell: true, execFsMode: 'strict' });
  // A file of its own each time: the agent shell's run and the learn
  // run are different sandbox users, and neither may write the other's.
  const command = 'echo from-the-run > "out-$(date +%s%N).txt"';
  const res = await engine.api('POST', '/agent-shell', { projectDir: project, command, agent: 'claude-code' });
  assert.equal(res.run.isolation, 'bwrap');
  assert.equal(res.run.projectDir, project, 'the record names its project');
  const { page, context, problems } = await openDashboard(browser, engine);
  t.after(() => context.close());
  const row = page.locator(`[data-card=runs] tr[data-run="${res.run.id}"]`);
  await row.waitFor({ timeout: 10_000 });
  await row.locator('button.expander').click();
  const propose = page.locator(`#out-${res.run.id}`).getByTestId('propose-policy');
  await propose.locator('summary').click();
  assert.equal(await propose.locator('input').inputValue(), command, "the run's command fills the form");
  await propose.getByRole('button', { name: 'Learn' }).click();
  const diff = propose.getByTestId('proposal-diff');
  await diff.waitFor({ timeout: 30_000 });
  assert.match(await diff.innerText(), /\+ fsMode: "strict"/);
  await propose.getByRole('button', { name: 'Apply' }).click();
  await propose.getByTestId('proposal-applied').waitFor({ timeout: 10_000 });
  assert.match(readFileSync(join(project, '.senclaw', 'policy.json'), 'utf8'), /"fsMode": "strict"/);
  assert.deepEqual(problems, [], 'the page logged errors');
});
