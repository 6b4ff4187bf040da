// The engine's client: the only module of the dashboard that talks to the
// engine. Every call goes to /api/sandbox/ on the page's own origin with the
// page token the server put in the page (<meta name="senclaw-token">) as its
// bearer token; the browser adds the session cookie, which no script here
// can read, and the token works only with it. In the desktop window the
// token is "inproc" and the same requests reach the engine through the
// window's asset server, so the UI needs no window.go.

// The engine's answers and bodies are the schemas of app/api/openapi.json,
// generated into api.gen.ts (npm run gen:api): a field the server adds,
// renames or drops shows here as a type error, not as a page that reads
// undefined. Only what the dashboard itself builds (queries, pages) is
// written by hand below.
import type * as wire from './api.gen';

export type Capability = wire.Capability;
export type Capabilities = wire.Capabilities;
export type ExecPolicy = wire.ExecPolicy;
export type Settings = wire.Settings;
/** GuardSettings are the shell guard's: each deny group on or off, and what a match does in a sandbox. */
export type GuardSettings = wire.GuardSettings;
/** ExecSettings govern host exec: the tenant host policy, and the environment's override of it. */
export type ExecSettings = wire.ExecSettings;
/** Integration is where one agent's shell is handed to the agent shell. */
export type Integration = wire.Integration;
export type PortRules = wire.PortRules;
export type Mount = wire.Mount;
export type Sandbox = wire.Sandbox;
/** TraceEvent is one traced event of a run (file.read, proc.spawn, net.connect, denied, ...). */
export type TraceEvent = wire.StoredEvent;
export type EventsResult = wire.EventsResult;
export type ProcessInfo = wire.ProcessInfo;
export type StatsPoint = wire.StatsPoint;
export type Stats = wire.Stats;
export type RunRecord = wire.RunRecord;
/** Firing is one entry of a schedule's history. */
export type Firing = wire.Firing;
export type Schedule = wire.Schedule;
/** SandboxPage is one page of the sandboxes, with the total that match. */
export type SandboxPage = wire.SandboxPage;
/** RunPage is one page of the run records, with the total that match. */
export type RunPage = wire.RunPage;
/** Refusal is one thing a run's sandbox was refused, with how to allow it. */
export type Refusal = wire.Refusal;
/** SecretInfo is a secret as the engine shows it: never its value. */
export type SecretInfo = wire.SecretInfo;
/** SecretBody adds a secret: its name, hosts, header, format and value. */
export type SecretBody = wire.SecretBody;

/** TenantView is a tenant: its quota, tool policy and directory. */
export type TenantView = wire.TenantView;
/** SecurityEvent is one refusal (or degraded guarantee) the engine recorded. */
export type SecurityEvent = wire.SecurityEvent;
export type Status = wire.Status;
/** PolicyCheck is the effective policy of a project's runs, each value with its file. */
export type PolicyCheck = wire.PolicyCheck;
/** PolicyLearn is a learn run and the policy it proposes, as a diff. */
export type PolicyLearn = wire.PolicyLearn;

/** FsMode is what a sandbox may read. */
export type FsMode = Sandbox['fsMode'];

/** ProbeState is where a backend stands on this machine. */
export type ProbeState = Capability['state'];

/** ListQuery asks for one page of a list: the items matching q, of one
 * tenant ("" every tenant's, "-" the owner's own). */
export interface ListQuery {
  offset: number;
  limit: number;
  q: string;
  tenant?: string;
}

/** SecurityQuery narrows the security events: one principal (a label,
 * or a kind and a colon) and one kind (or its prefix); "" for all. */
export interface SecurityQuery {
  principal: string;
  kind: string;
}

/** tenantParam is the ?tenant of the owner's lists ("" for none). */
function tenantParam(tenant: string | undefined): string {
  return tenant ? '?tenant=' + encodeURIComponent(tenant) : '';
}

/** RunQuery is a page of the runs, narrowed to one source or sandbox, or
 * to the refused ones ("" and false: all). */
export interface RunQuery extends ListQuery {
  source: string;
  sandboxId: string;
  refused: boolean;
}

function listParams(q: ListQuery): string {
  const p = new URLSearchParams({ limit: String(q.limit), offset: String(q.offset) });
  if (q.q.trim()) p.set('q', q.q.trim());
  if (q.tenant) p.set('tenant', q.tenant);
  return p.toString();
}

function runParams(q: RunQuery): string {
  const p = new URLSearchParams(listParams(q));
  if (q.source) p.set('source', q.source);
  if (q.sandboxId) p.set('sandboxId', q.sandboxId);
  if (q.refused) p.set('refused', 'true');
  return p.toString();
}

/** ApiError is an answer other than 2xx; field names the bad input. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const base = '/api/sandbox';

/** noAnswer is the error of a request the engine did not answer at all. */
export const noAnswer = 'the engine does not answer';

/** sessionEnded is the error of every request once the page's session is gone. */
export const sessionEnded = "this page's session has ended (it expired, or the engine was restarted): open the dashboard again with senclaw url";

/** readTimeoutMs bounds a read: a probe of the backends takes 5 s at most. */
const readTimeoutMs = 10_000;

function token(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="senclaw-token"]')?.content ?? '';
}

/** Fetched is a body with its raw text, so that pollers can tell "same as
 * last time" without comparing objects. */
export interface Fetched<T> {
  text: string;
  data: T;
}

async function call(method: string, path: string, body?: unknown, root = base): Promise<string> {
  let res: Response;
  try {
    res = await fetch(root + path, {
      method,
      headers: {
        Authorization: 'Bearer ' + token(),
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      // A read the engine does not answer in time counts as no answer
      // (a hung or suspended engine); changes may take longer.
      signal: method === 'GET' ? AbortSignal.timeout(readTimeoutMs) : undefined,
    });
  } catch (err) {
    // The whole page says so once (App.svelte); String(err) is only
    // the browser's "Failed to fetch".
    throw new ApiError(noAnswer, 0);
  }
  const text = await res.text();
  if (res.status === 401) {
    // The page's session is gone: it expired, or the engine restarted
    // (sessions live in its memory). Only a new login brings it back.
    throw new ApiError(sessionEnded, 401);
  }
  if (!res.ok) {
    let msg = text.trim() || res.statusText;
    let field: string | undefined;
    try {
      const e = JSON.parse(text) as { error?: string; field?: string };
      msg = e.error ?? msg;
      field = e.field || undefined;
    } catch {
      // not JSON: keep the text
    }
    throw new ApiError(msg, res.status, field);
  }
  return text;
}

async function get<T>(path: string, root = base): Promise<Fetched<T>> {
  const text = await call('GET', path, undefined, root);
  return { text, data: JSON.parse(text) as T };
}

async function send<T>(method: string, path: string, body?: unknown, root = base): Promise<T> {
  const text = await call(method, path, body, root);
  return JSON.parse(text) as T;
}

const id = (s: string) => encodeURIComponent(s);

/** The engine's API, one function per route the dashboard uses. */
export const api = {
  caps: (refresh = false) => get<Capabilities>('/caps' + (refresh ? '?refresh=true' : '')),
  policy: () => get<ExecPolicy>('/exec-policy'),
  /** setPolicy changes only the fields it names (the server merges). */
  setPolicy: (p: Partial<ExecPolicy>) => send<ExecPolicy>('PUT', '/exec-policy', p),
  settings: () => get<Settings>('/settings'),
  /** setSettings changes only the fields it names (the server merges). */
  setSettings: (s: Partial<Settings>) => send<Settings>('PUT', '/settings', s),
  /** sandboxes lists one page of the sandboxes matching q. */
  sandboxes: (q: ListQuery) => get<SandboxPage>('/sandboxes?' + listParams(q)),
  stats: (sandboxId: string) => get<Stats>(`/sandboxes/${id(sandboxId)}/stats`),
  kill: (sandboxId: string, pid: number) =>
    send<wire.KillReply>('POST', `/sandboxes/${id(sandboxId)}/kill`, { pid } satisfies wire.KillBody),
  stop: (sandboxId: string) => send<wire.StopReply>('POST', `/sandboxes/${id(sandboxId)}/stop`),
  stopAll: () => send<wire.StopReply>('POST', '/stop-all'),
  remove: (sandboxId: string, purge: boolean) =>
    send<wire.DeleteReply>(
      'DELETE',
      `/sandboxes/${id(sandboxId)}` + (purge ? '?purge=true' : ''),
    ),
  /** runs lists one page of the runs matching q, newest first. */
  runs: (q: RunQuery) => get<RunPage>('/runs?' + runParams(q)),
  /** events lists what a traced run did, newest first. */
  events: (sandboxId: string, runId: string) =>
    get<EventsResult>(`/sandboxes/${id(sandboxId)}/events?runId=${id(runId)}&limit=1000`),
  run: (runId: string) => get<RunRecord>(`/runs/${id(runId)}`),
  schedules: (tenant = '') => get<wire.ScheduleList>('/schedules' + tenantParam(tenant)),
  status: () => get<Status>('/status'),
  /** tenants lists the tenants (the owner's). */
  tenants: () => get<wire.TenantList>('/tenants'),
  /** securityEvents lists the last 50 security events matching q, newest first. */
  securityEvents: (q: SecurityQuery) => {
    const p = new URLSearchParams({ limit: '50' });
    if (q.principal) p.set('principal', q.principal);
    if (q.kind) p.set('kind', q.kind);
    return get<wire.SecurityEventPage>('/security-events?' + p.toString());
  },
  pauseSchedule: (scheduleId: string) => send<Schedule>('POST', `/schedules/${id(scheduleId)}/pause`),
  resumeSchedule: (scheduleId: string) => send<Schedule>('POST', `/schedules/${id(scheduleId)}/resume`),
  /** runSchedule fires a schedule now; the run goes on after the answer. */
  runSchedule: (scheduleId: string) =>
    send<wire.RunStarted>('POST', `/schedules/${id(scheduleId)}/run`),
  scheduleHistory: (scheduleId: string, limit = 10) =>
    get<wire.ScheduleHistory>(`/schedules/${id(scheduleId)}/history?limit=${limit}`),
  autostart: () => get<Autostart>('/autostart'),
  setAutostart: (enabled: boolean) => send<Autostart>('PUT', '/autostart', { enabled } satisfies wire.AutostartBody),
  /** integrations says where agents' shells are handed to the agent shell. */
  integrations: () => get<wire.IntegrationList>('/integrations'),
  /** secrets lists the engine's secrets and the sandboxes that use each. */
  secrets: () => get<wire.SecretList>('/secrets'),
  /** addSecret stores a secret; its value is never answered. */
  addSecret: (body: SecretBody) => send<SecretInfo>('POST', '/secrets', body),
  removeSecret: (name: string) => send<wire.SecretRemoved>('DELETE', `/secrets/${id(name)}`),
  /** policyCheck says what the policy files make of a project's runs, running nothing. */
  policyCheck: (body: wire.PolicyCheckRequest) => send<PolicyCheck>('POST', '/policy/check', body),
  /** policyLearn runs a command once in a project, traced, and answers the policy it proposes. */
  policyLearn: (body: wire.PolicyLearnRequest) => send<PolicyLearn>('POST', '/policy/learn', body),
  /** policyApply saves a proposal as the project's .senclaw/policy.json. */
  policyApply: (body: wire.PolicyApplyRequest) => send<PolicyCheck>('POST', '/policy/apply', body),
};

/** Start at login: the owner's XDG autostart entry, as it is on disk. */
export type Autostart = wire.Autostart;

// Space Apps, under /api/space/apps (the same token and checks).

export type AppView = wire.AppView;
/** AppState is where a Space App stands. */
export type AppState = AppView['state'];
export type AppNetwork = wire.AppSandboxSettings['network'];
export type AppHealth = wire.AppHealth;
/** AppSandboxSummary is the Sandbox, Read mode and Network columns. */
export type AppSandboxSummary = wire.AppSandboxSummary;
/** PortHolder is a process that holds an app's port (port-taken, outside). */
export type PortHolder = wire.PortHolder;
/** AppsOverview sums up every app. */
export type AppsOverview = wire.AppOverview;
export type AppFolder = wire.AppFolder;
/** AppSandboxSettings are an app's stored sandbox configuration. */
export type AppSandboxSettings = wire.AppSandboxSettings;
/** AppSandboxView is the configuration and what the running process got. */
export type AppSandboxView = wire.AppSandboxView;
/** AppSandboxReply says exactly what a PUT applied how. */
export type AppSandboxReply = wire.AppSandboxReply;
export type HealthPoint = wire.HealthPoint;
export type AppSocket = wire.Socket;
export type AppLaunch = wire.LaunchView;
/** AppRuntime is what the Monitor panel shows of one app. */
export type AppRuntime = wire.AppRuntime;
/** AppIsolation is the effective isolation of an app, in words. */
export type AppIsolation = wire.AppIsolation;
/** AppLog is the end of an app's log. */
export type AppLog = wire.LogChunk;
export type AppStartReply = wire.StartReply;

const spaceBase = '/api/space/apps';

/** The Space Apps routes the dashboard uses. */
export const spaceApi = {
  /** list is every app, running ones first then by name, with the overview. */
  list: (tenant = '') => get<wire.AppList>(tenantParam(tenant), spaceBase),
  /** start, restart: wait=false answers once launched; the list shows the rest. */
  start: (appId: string, wait = false) => send<AppStartReply>('POST', `/${id(appId)}/start?wait=${wait}`, undefined, spaceBase),
  restart: (appId: string, wait = false) =>
    send<AppStartReply>('POST', `/${id(appId)}/restart?wait=${wait}`, undefined, spaceBase),
  stop: (appId: string) => send<wire.AppStopReply>('POST', `/${id(appId)}/stop`, undefined, spaceBase),
  runtime: (appId: string) => get<AppRuntime>(`/${id(appId)}/runtime`, spaceBase),
  isolation: (appId: string) => get<AppIsolation>(`/${id(appId)}/isolation`, spaceBase),
  /** logs reads the log's last limit bytes (at most 1 MiB). */
  logs: (appId: string, limit: number) => get<AppLog>(`/${id(appId)}/logs?limit=${limit}`, spaceBase),
  clearLogs: (appId: string) => send<wire.LogClearReply>('DELETE', `/${id(appId)}/logs`, undefined, spaceBase),
  sandbox: (appId: string) => get<AppSandboxView>(`/${id(appId)}/sandbox`, spaceBase),
  /** setSandbox changes only the fields it names; a list given replaces the old one. */
  setSandbox: (appId: string, patch: wire.SandboxPatch) =>
    send<AppSandboxReply>('PUT', `/${id(appId)}/sandbox`, patch, spaceBase),
};

/** openExternal opens url outside the dashboard: in the desktop window
 * through the window's runtime (the system browser), and reports whether
 * it did; in a browser it returns false and the link opens as usual. */
export function openExternal(url: string): boolean {
  const rt = (window as unknown as { runtime?: { BrowserOpenURL?: (u: string) => void } }).runtime;
  if (typeof rt?.BrowserOpenURL !== 'function') return false;
  rt.BrowserOpenURL(url);
  return true;
}
