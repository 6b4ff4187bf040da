import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import openapi from '../../app/api/openapi.json';
import { api, ApiError, noAnswer, openExternal, sessionEnded, spaceApi } from './api';

// The API module against a fake fetch: what it sends (method, route,
// token, body) and what it makes of each kind of answer. The routes it
// calls are checked against app/api/openapi.json, the server's own list.

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

let sent: Sent[];
let answer: () => Response | Promise<Response>;

beforeEach(() => {
  sent = [];
  answer = () => new Response('{}', { status: 200 });
  vi.stubGlobal('document', {
    querySelector: (sel: string) => (sel === 'meta[name="senclaw-token"]' ? { content: 'page-token' } : null),
  });
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    sent.push({
      method: init.method ?? 'GET',
      url,
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
      signal: init.signal ?? undefined,
    });
    return answer();
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('requests', () => {
  it('send the page token, and JSON only with a body', async () => {
    await api.settings();
    await api.setPolicy({ runPython: false });
    expect(sent[0]).toMatchObject({ method: 'GET', url: '/api/sandbox/settings', headers: { Authorization: 'Bearer page-token' } });
    expect(sent[0].headers['Content-Type']).toBeUndefined();
    expect(sent[0].body).toBeUndefined();
    expect(sent[1]).toMatchObject({ method: 'PUT', url: '/api/sandbox/exec-policy', body: '{"runPython":false}' });
    expect(sent[1].headers['Content-Type']).toBe('application/json');
  });

  it('bound reads in time, and never changes', async () => {
    await api.caps();
    await api.stopAll();
    expect(sent[0].signal).toBeInstanceOf(AbortSignal);
    expect(sent[1].signal).toBeUndefined();
  });

  it('escape ids and build list queries', async () => {
    await api.stats('a b/c');
    await api.sandboxes({ offset: 20, limit: 10, q: '  web  ' });
    await api.sandboxes({ offset: 0, limit: 10, q: '   ' });
    await api.runs({ offset: 0, limit: 50, q: '', source: 'mcp', sandboxId: 'sb-1', refused: true });
    await api.runs({ offset: 0, limit: 50, q: '', source: '', sandboxId: '', refused: false });
    await api.remove('sb-1', true);
    await spaceApi.start('my app', true);
    expect(sent.map((s) => s.url)).toEqual([
      '/api/sandbox/sandboxes/a%20b%2Fc/stats',
      '/api/sandbox/sandboxes?limit=10&offset=20&q=web',
      '/api/sandbox/sandboxes?limit=10&offset=0',
      '/api/sandbox/runs?limit=50&offset=0&source=mcp&sandboxId=sb-1&refused=true',
      '/api/sandbox/runs?limit=50&offset=0',
      '/api/sandbox/sandboxes/sb-1?purge=true',
      '/api/space/apps/my%20app/start?wait=true',
    ]);
  });
});

describe('answers', () => {
  it('keep a read’s raw text beside its data, for pollers', async () => {
    answer = () => new Response('{"enabled":true,"path":"/x"}');
    const got = await api.autostart();
    expect(got).toEqual({ text: '{"enabled":true,"path":"/x"}', data: { enabled: true, path: '/x' } });
  });

  it('turn a refusal into an ApiError with its field', async () => {
    answer = () => new Response('{"error":"defaultCpus: 0 is not between 0.1 and 64","field":"defaultCpus"}', { status: 400 });
    const err = await api.setSettings({ defaultCpus: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 400, field: 'defaultCpus', message: 'defaultCpus: 0 is not between 0.1 and 64' });
  });

  it('keep a refusal that is not JSON as its text, or the status text', async () => {
    answer = () => new Response('upstream broke\n', { status: 502 });
    await expect(api.policy()).rejects.toMatchObject({ status: 502, message: 'upstream broke', field: undefined });
    answer = () => new Response('', { status: 404, statusText: 'Not Found' });
    await expect(api.policy()).rejects.toMatchObject({ status: 404, message: 'Not Found' });
  });

  it('say the session ended on 401, whatever the body', async () => {
    answer = () => new Response('{"error":"unauthorized"}', { status: 401 });
    await expect(api.caps()).rejects.toMatchObject({ status: 401, message: sessionEnded });
  });

  it('say the engine does not answer when nothing came back', async () => {
    answer = () => Promise.reject(new TypeError('Failed to fetch'));
    await expect(api.caps()).rejects.toMatchObject({ status: 0, message: noAnswer });
  });
});

describe('openExternal', () => {
  it('opens through the desktop window’s runtime when there is one', () => {
    const opened: string[] = [];
    vi.stubGlobal('window', { runtime: { BrowserOpenURL: (u: string) => opened.push(u) } });
    expect(openExternal('http://127.0.0.1:8100/')).toBe(true);
    expect(opened).toEqual(['http://127.0.0.1:8100/']);
  });
  it('leaves the link to the browser otherwise', () => {
    vi.stubGlobal('window', {});
    expect(openExternal('http://127.0.0.1:8100/')).toBe(false);
  });
});

// Every function of api and spaceApi, called once. A function added to
// either without a line here fails the coverage check below.
const calls: Record<string, () => Promise<unknown>> = {
  caps: () => api.caps(true),
  policy: () => api.policy(),
  setPolicy: () => api.setPolicy({ execShell: true }),
  settings: () => api.settings(),
  setSettings: () => api.setSettings({ notifications: false }),
  sandboxes: () => api.sandboxes({ offset: 0, limit: 5, q: '', tenant: '-' }),
  stats: () => api.stats('sb-1'),
  kill: () => api.kill('sb-1', 42),
  stop: () => api.stop('sb-1'),
  stopAll: () => api.stopAll(),
  remove: () => api.remove('sb-1', false),
  runs: () => api.runs({ offset: 0, limit: 5, q: '', source: '', sandboxId: '', refused: false }),
  events: () => api.events('sb-1', 'run-1'),
  run: () => api.run('run-1'),
  schedules: () => api.schedules('acme'),
  status: () => api.status(),
  tenants: () => api.tenants(),
  securityEvents: () => api.securityEvents({ principal: 'tenant:acme', kind: 'security.scope_denied' }),
  pauseSchedule: () => api.pauseSchedule('sch-1'),
  resumeSchedule: () => api.resumeSchedule('sch-1'),
  runSchedule: () => api.runSchedule('sch-1'),
  scheduleHistory: () => api.scheduleHistory('sch-1'),
  autostart: () => api.autostart(),
  setAutostart: () => api.setAutostart(true),
  integrations: () => api.integrations(),
  secrets: () => api.secrets(),
  addSecret: () => api.addSecret({ name: 'gh', hosts: ['api.github.com'], value: 'v' }),
  removeSecret: () => api.removeSecret('gh'),
  policyCheck: () => api.policyCheck({ projectDir: '/home/me/src/app', agentShell: true }),
  policyLearn: () => api.policyLearn({ projectDir: '/home/me/src/app', command: 'python3 fetch.py' }),
  policyApply: () => api.policyApply({ projectDir: '/home/me/src/app', policy: '{"fsMode": "strict"}' }),
  'space.list': () => spaceApi.list('acme'),
  'space.start': () => spaceApi.start('app-1'),
  'space.restart': () => spaceApi.restart('app-1'),
  'space.stop': () => spaceApi.stop('app-1'),
  'space.runtime': () => spaceApi.runtime('app-1'),
  'space.isolation': () => spaceApi.isolation('app-1'),
  'space.logs': () => spaceApi.logs('app-1', 4096),
  'space.clearLogs': () => spaceApi.clearLogs('app-1'),
  'space.sandbox': () => spaceApi.sandbox('app-1'),
  'space.setSandbox': () => spaceApi.setSandbox('app-1', { network: 'hosts', hosts: ['pypi.org'] }),
};

describe('routes', () => {
  const served = Object.entries(openapi.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops)
      .filter((m) => m !== 'parameters')
      .map((m) => ({ method: m.toUpperCase(), path, re: new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$') })),
  );

  it('has a call for every function of the module', () => {
    const names = [...Object.keys(api), ...Object.keys(spaceApi).map((k) => 'space.' + k)].sort();
    expect(Object.keys(calls).sort()).toEqual(names);
  });

  it.each(Object.keys(calls))('%s calls a route the server serves', async (name) => {
    await calls[name]();
    expect(sent).toHaveLength(1);
    const { method, url } = sent[0];
    const path = url.split('?')[0];
    const route = served.find((r) => r.method === method && r.re.test(path));
    expect(route, `${method} ${path} is not in app/api/openapi.json`).toBeDefined();
  });
});
