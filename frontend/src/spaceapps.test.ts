import { describe, expect, it } from 'vitest';
import type { AppView } from './api';
import { compareApps, isNone, matches, running, stateClass, stateWords, supervised } from './spaceapps';

const now = Date.parse('2025-06-01T12:00:00Z');

// app is an AppView as the engine sends it, with the fields a case changes.
function app(over: Partial<AppView> & { id: string }): AppView {
  return {
    name: over.id,
    description: '',
    dir: '/home/me/apps/' + over.id,
    inPlace: false,
    port: 8100,
    url: 'http://127.0.0.1:8100/',
    healthPath: '/',
    restart: 'on-failure',
    autostart: false,
    state: 'stopped',
    stateText: '',
    stoppedByUser: false,
    pid: 0,
    startedAtMs: 0,
    uptimeSec: 0,
    launches: 0,
    totalLaunches: 0,
    health: { status: 'unknown', latencyMs: 0 },
    cpuPercent: 0,
    rssMb: 0,
    spark: [],
    sandbox: {
      enabled: true,
      forced: false,
      isolation: '',
      backend: 'auto',
      readMode: 'strict',
      network: 'off',
      hostCount: 0,
      denied: 0,
      recentDenied: [],
      allowed: 0,
    },
    needsRestart: false,
    needsRestartReasons: [],
    lastLog: [],
    ...over,
  };
}

describe('isNone', () => {
  it.each([
    ['none', true],
    ['none (degraded)', true],
    ['none (outside the engine)', true],
    ['bwrap', false],
    ['nonesuch', false],
    ['', false],
  ])('%j is no barrier: %s', (iso, want) => {
    expect(isNone(iso)).toBe(want);
  });
});

describe('running and supervised', () => {
  it('counts a launch with a process in starting, running or stopping as running', () => {
    for (const state of ['starting', 'running', 'stopping'] as const) {
      expect(running(app({ id: 'a', state, pid: 42 }))).toBe(true);
      expect(running(app({ id: 'a', state, pid: 0 }))).toBe(false);
    }
    expect(running(app({ id: 'a', state: 'exited', pid: 42 }))).toBe(false);
  });
  it('supervises an app in backoff, which has no process', () => {
    expect(supervised(app({ id: 'a', state: 'backoff' }))).toBe(true);
    expect(supervised(app({ id: 'a', state: 'crash-looping' }))).toBe(false);
    expect(supervised(app({ id: 'a', state: 'running', pid: 7 }))).toBe(true);
  });
});

describe('stateWords', () => {
  it('says when a backoff tries again instead of the engine’s countdown', () => {
    const a = app({
      id: 'a',
      state: 'backoff',
      stateText: 'exited with code 1; restarting in 4 s',
      nextAttemptAtMs: now + 4000,
    });
    expect(stateWords(a, now)).toBe('exited with code 1; next attempt in 4 s');
    expect(stateWords({ ...a, nextAttemptAtMs: undefined }, now)).toBe('exited with code 1; restarting soon');
  });
  it('names the process that holds the port', () => {
    const holder = { pid: 42, command: 'python3 -m http.server' };
    expect(stateWords(app({ id: 'a', state: 'port-taken', portHolder: holder }), now)).toBe(
      'port 8100 taken by PID 42 (python3 -m http.server)',
    );
    expect(stateWords(app({ id: 'a', state: 'outside', portHolder: holder }), now)).toBe(
      'running outside the engine: PID 42 (python3 -m http.server) holds port 8100',
    );
    expect(stateWords(app({ id: 'a', state: 'port-taken', stateText: 'port taken' }), now)).toBe('port taken');
  });
  it('tells a stop by a person from one by the engine', () => {
    expect(stateWords(app({ id: 'a', state: 'stopped', stoppedByUser: true }), now)).toMatch(/^stopped by a person/);
    expect(stateWords(app({ id: 'a', state: 'stopped' }), now)).toBe('stopped');
    expect(stateWords(app({ id: 'a', state: 'failed' }), now)).toBe('failed');
    expect(stateWords(app({ id: 'a', state: 'failed', stateText: 'no such file' }), now)).toBe('no such file');
  });
});

describe('stateClass', () => {
  it.each([
    [app({ id: 'a', state: 'running' }), 'ok'],
    [app({ id: 'a', state: 'running', health: { status: 'failing', latencyMs: 0 } }), 'warn'],
    [app({ id: 'a', state: 'starting' }), 'info'],
    [app({ id: 'a', state: 'backoff' }), 'warn'],
    [app({ id: 'a', state: 'outside' }), 'warn'],
    [app({ id: 'a', state: 'crash-looping' }), 'bad'],
    [app({ id: 'a', state: 'port-taken' }), 'bad'],
    [app({ id: 'a', state: 'stopped' }), 'off'],
  ])('%#: %s', (a, want) => {
    expect(stateClass(a)).toBe(want);
  });
});

describe('compareApps', () => {
  const sorted = (key: Parameters<typeof compareApps>[0], apps: AppView[]) =>
    [...apps].sort((a, b) => compareApps(key, a, b)).map((a) => a.id);

  it('sorts names without case, ties by id', () => {
    expect(sorted('name', [app({ id: 'b', name: 'beta' }), app({ id: 'a', name: 'Alpha' }), app({ id: 'c', name: 'alpha' })])).toEqual([
      'a',
      'c',
      'b',
    ]);
  });
  it('puts running apps first in the Sandbox column, by what they got', () => {
    const up = (id: string, isolation: string) =>
      app({ id, state: 'running', pid: 1, sandbox: { ...app({ id }).sandbox, isolation } });
    expect(sorted('sandbox', [app({ id: 'stopped' }), up('docker', 'docker'), up('bwrap', 'bwrap')])).toEqual([
      'bwrap',
      'docker',
      'stopped',
    ]);
  });
  it('orders networks all, hosts, off, then anything it does not know', () => {
    const net = (id: string, network: string) => app({ id, sandbox: { ...app({ id }).sandbox, network } });
    expect(sorted('network', [net('w', 'weird'), net('o', 'off'), net('h', 'hosts'), net('a', 'all')])).toEqual(['a', 'h', 'o', 'w']);
  });
  it('breaks ties by name', () => {
    expect(sorted('usage', [app({ id: 'z' }), app({ id: 'm' }), app({ id: 'a', cpuPercent: 5 })])).toEqual(['m', 'z', 'a']);
  });
});

describe('matches', () => {
  const a = app({ id: 'notes', name: 'My Notes', description: 'a small wiki', state: 'crash-looping', stateText: 'gave up after 5 starts' });
  it.each([
    ['', true],
    ['  ', true],
    ['NOTES', true],
    ['wiki', true],
    ['crash', true],
    ['gave up', true],
    ['  my notes ', true],
    ['calendar', false],
  ])('%j: %s', (q, want) => {
    expect(matches(a, q)).toBe(want);
  });
});
