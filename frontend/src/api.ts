// The engine's client: the only module of the dashboard that talks to the
// engine. Every call goes to /api/sandbox/ on the page's own origin with the
// page token the server put in the page (<meta name="senclaw-token">) as its
// bearer token; the browser adds the session cookie, which no script here
// can read, and the token works only with it. In the desktop window the
// token is "inproc" and the same requests reach the engine through the
// window's asset server, so the UI needs no window.go.

/** FsMode is what a sandbox may read. */
export type FsMode = 'strict' | 'allowlist' | 'open';

/** ProbeState is where a backend stands on this machine. */
export type ProbeState = 'never seen' | 'seen and gone' | 'healthy';

export interface Capability {
  backend: string;
  state: ProbeState;
  version?: string;
  reason: string;
  isolates: boolean;
  enforces: string[];
  details?: Record<string, string>;
  checkedAt: string;
}

export interface Capabilities {
  os: string;
  state: 'isolated' | 'degraded';
  summary: string;
  recommended: string;
  backends: Capability[];
  facilities?: Capability[];
}

export interface ExecPolicy {
  execShell: boolean;
  execNetwork: boolean;
  execFsMode: FsMode;
  execLoopback: number[];
  runPython: boolean;
  runNode: boolean;
  codeNetwork: boolean;
  schedulerScript: boolean;
  schedulerNetwork: boolean;
}

/** Integration is where one agent's shell is handed to the agent shell. */
export interface Integration {
  agent: 'claude-code' | 'gemini-cli' | 'shell';
  scope: 'user' | 'project';
  path: string;
  project?: string;
  installed: boolean;
  command?: string;
  problem?: string;
}

export interface Settings {
  defaultFsMode: FsMode;
  allowlist: string[];
  allowedSockets: string[];
  defaultNetwork: boolean;
  defaultCpus: number;
  defaultMemoryMb: number;
  defaultPids: number;
  defaultTimeoutMs: number;
  defaultDiskMb: number;
  sandboxUid: number;
  sandboxGid: number;
  allowDirect: boolean;
  landlockListen: boolean;
  defaultImage: string;
  mountAllow: string[];
  /** The engine's bounds: sandboxes it holds; runs executing at once and
   * waiting for a place; background runs; runs per sandbox; free disk kept. */
  maxSandboxes: number;
  concurrency: number;
  queueLength: number;
  maxBackgroundRuns: number;
  maxRunsPerSandbox: number;
  notifications: boolean;
  mcpSessionIdleMinutes: number;
  mcpMaxSessions: number;
  /** Idle Docker containers kept ready per one-shot configuration (0: none). */
  dockerPoolSize: number;
  minFreeDiskMb: number;
}

export interface PortRules {
  listen: number[] | null;
  connect: number[] | null;
  loopback: number[] | null;
}

export interface Mount {
  source: string;
  target: string;
  readOnly?: boolean;
}

export interface Sandbox {
  id: string;
  name: string;
  kind?: string;
  backend: string;
  image?: string;
  workspace: string;
  ownWorkspace: boolean;
  fsMode: FsMode;
  mounts: Mount[] | null;
  network: boolean;
  ports: PortRules;
  cpus: number;
  memoryMb: number;
  pids: number;
  diskMb: number;
  timeoutMs: number;
  state: string;
  /** What a container backend keeps: running, stopped, none, "needs recreate". */
  container?: string;
  traceEnabled?: boolean;
  lastError?: string;
  createdAt: string;
  updatedAt: string;
  /** Absent until its first run. */
  lastUsedAt?: string;
}

export interface TraceEvent {
  runId?: string;
  tsMs: number;
  pid: number;
  /** file.read, file.write, proc.spawn, net.connect, net.dns, denied, trace.* */
  kind: string;
  target: string;
  detail?: string;
  /** strace (outside the sandbox), diff, or in-sandbox (can be tampered with). */
  source: string;
}

export interface EventsResult {
  traceEnabled: boolean;
  events: TraceEvent[];
  note?: string;
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  command: string;
  cpuPercent: number;
  rssMb: number;
  rssBytes: number;
  elapsedSec: number;
}

export interface StatsPoint {
  atMs: number;
  cpuPercent: number;
  rssMb: number;
}

export interface Stats {
  sandboxId: string;
  source: string;
  running: boolean;
  processes: ProcessInfo[];
  cpuPercent: number;
  rssMb: number;
  memoryLimitMb: number;
  sampledAtMs: number;
  history: StatsPoint[];
  note?: string;
  /** Connections the egress proxy refused, and the last distinct hosts. */
  denied?: number;
  recentDenied?: string[];
}

export interface RunRecord {
  id: string;
  sandboxId: string;
  sandboxName: string;
  source: string;
  kind: string;
  command?: string;
  language?: string;
  backend: string;
  isolation: string;
  enforced?: string[];
  missing?: string[];
  network: boolean;
  background?: boolean;
  /** terminal: the run had a pseudo-terminal (senclaw agent-shell at a terminal). */
  terminal?: boolean;
  /** agent: whose shell asked for an agent-shell run (claude-code, gemini-cli, shell). */
  agent?: string;
  state: string;
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
  killed?: string;
  durationMs: number;
  stdout: string;
  stderr: string;
  logFile?: string;
  error?: string;
  startedAt: string;
  /** The schedule that fired it (source scheduler). */
  scheduleId?: string;
}

/** Firing is one entry of a schedule's history. */
export interface Firing {
  at: string;
  trigger: 'schedule' | 'catch-up' | 'manual';
  outcome: 'ok' | 'failed' | 'refused' | 'skipped' | 'missed' | 'running';
  runId?: string;
  startedAt?: string;
  exitCode?: number | null;
  isolation?: string;
  durationMs?: number;
  reason?: string;
  missed?: number;
}

/** Schedule is a scheduled script as the list shows it (without its code). */
export interface Schedule {
  id: string;
  name: string;
  cron: string;
  timeZone: string;
  /** The zone it is read in, by name. */
  zone: string;
  /** The expression in words. */
  description: string;
  language: string;
  summary: string;
  timeoutMs: number;
  network: boolean;
  paused: boolean;
  missed: 'skip' | 'once';
  jitterSec: number;
  nextRun: string | null;
  running: boolean;
  lastRun: Firing | null;
}

/** ListQuery asks for one page of a list: the items matching q. */
export interface ListQuery {
  offset: number;
  limit: number;
  q: string;
}

/** SandboxPage is one page of the sandboxes, with the total that match. */
export interface SandboxPage {
  sandboxes: Sandbox[];
  total: number;
  /** How many of all the sandboxes have a run going. */
  running: number;
}

/** RunPage is one page of the run records, with the total that match. */
export interface RunPage {
  runs: RunRecord[];
  total: number;
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
    send<{ ok: boolean; killed: number }>('POST', `/sandboxes/${id(sandboxId)}/kill`, { pid }),
  stop: (sandboxId: string) => send<{ ok: boolean; stopped: number }>('POST', `/sandboxes/${id(sandboxId)}/stop`),
  stopAll: () => send<{ ok: boolean; stopped: number }>('POST', '/stop-all'),
  remove: (sandboxId: string, purge: boolean) =>
    send<{ ok: boolean; deleted: string; files: string }>(
      'DELETE',
      `/sandboxes/${id(sandboxId)}` + (purge ? '?purge=true' : ''),
    ),
  /** runs lists one page of the runs matching q, newest first. */
  runs: (q: RunQuery) => get<RunPage>('/runs?' + runParams(q)),
  /** events lists what a traced run did, newest first. */
  events: (sandboxId: string, runId: string) =>
    get<EventsResult>(`/sandboxes/${id(sandboxId)}/events?runId=${id(runId)}&limit=1000`),
  run: (runId: string) => get<RunRecord>(`/runs/${id(runId)}`),
  schedules: () => get<{ schedules: Schedule[] }>('/schedules'),
  pauseSchedule: (scheduleId: string) => send<Schedule>('POST', `/schedules/${id(scheduleId)}/pause`),
  resumeSchedule: (scheduleId: string) => send<Schedule>('POST', `/schedules/${id(scheduleId)}/resume`),
  /** runSchedule fires a schedule now; the run goes on after the answer. */
  runSchedule: (scheduleId: string) =>
    send<{ started: boolean; schedule: Schedule }>('POST', `/schedules/${id(scheduleId)}/run`),
  scheduleHistory: (scheduleId: string, limit = 10) =>
    get<{ history: Firing[] }>(`/schedules/${id(scheduleId)}/history?limit=${limit}`),
  autostart: () => get<Autostart>('/autostart'),
  setAutostart: (enabled: boolean) => send<Autostart>('PUT', '/autostart', { enabled }),
  /** integrations says where agents' shells are handed to the agent shell. */
  integrations: () => get<{ integrations: Integration[] }>('/integrations'),
};

/** Start at login: the owner's XDG autostart entry, as it is on disk. */
export interface Autostart {
  enabled: boolean;
  path: string;
  exec?: string;
  /** foreign: the file was not written by senclaw and is left alone. */
  foreign?: boolean;
}

// Space Apps, under /api/space/apps (the same token and checks).

/** AppState is where a Space App stands (AppView.state). */
export type AppState =
  | 'stopped'
  | 'starting'
  | 'running'
  | 'stopping'
  | 'backoff'
  | 'crash-looping'
  | 'exited'
  | 'failed'
  | 'port-taken'
  | 'outside';

export type AppNetwork = 'all' | 'hosts' | 'off';

export interface AppHealth {
  /** ok, failing or unknown (not probed yet). */
  status: 'ok' | 'failing' | 'unknown';
  httpStatus?: number;
  latencyMs: number;
  lastError?: string;
  checkedAtMs?: number;
}

/** AppSandboxSummary is the Sandbox, Read mode and Network columns. */
export interface AppSandboxSummary {
  enabled: boolean;
  forced: boolean;
  /** What the running process got (bwrap, docker, none, ...); "" when it does not run. */
  isolation: string;
  backend: string;
  readMode: FsMode;
  network: AppNetwork;
  hostCount: number;
  denied: number;
  /** The last distinct refused hosts, newest last. */
  recentDenied: string[];
  allowed: number;
}

/** PortHolder is a process that holds an app's port (port-taken, outside). */
export interface PortHolder {
  pid: number;
  command: string;
  cwd?: string;
  exe?: string;
}

/** AppView is one Space App as the list shows it. */
export interface AppView {
  id: string;
  name: string;
  description: string;
  dir: string;
  inPlace: boolean;
  port: number;
  url: string;
  healthPath: string;
  restart: string;
  autostart: boolean;
  state: AppState;
  stateText: string;
  stoppedByUser: boolean;
  pid: number;
  startedAtMs: number;
  uptimeSec: number;
  /** Launches since a person last started it (the card warns above 3), and in all. */
  launches: number;
  totalLaunches: number;
  health: AppHealth;
  cpuPercent: number;
  rssMb: number;
  /** The last 30 samples, one a second. */
  spark: StatsPoint[];
  sandbox: AppSandboxSummary;
  needsRestart: boolean;
  needsRestartReasons: string[];
  nextAttemptAtMs?: number;
  /** The log's last lines when it gave up or failed. */
  lastLog: string[];
  portHolder?: PortHolder;
}

/** AppsOverview sums up every app. */
export interface AppsOverview {
  apps: number;
  running: number;
  sandboxed: number;
  unsandboxed: number;
  needsRestart: number;
  crashLooping: number;
  denied: number;
  /** The engine's recommended backend for new launches ("" when none can isolate). */
  isolation: string;
}

export interface AppFolder {
  path: string;
  readOnly: boolean;
}

/** AppSandboxSettings are an app's stored sandbox configuration. */
export interface AppSandboxSettings {
  enabled: boolean;
  readMode: FsMode;
  network: AppNetwork;
  hosts: string[];
  loopback: number[];
  folders: AppFolder[];
  backend: string;
  image: string;
  daemonApi: boolean;
}

/** AppSandboxView is the configuration and what the running process got. */
export interface AppSandboxView {
  appId: string;
  settings: AppSandboxSettings;
  forced: boolean;
  lockReason?: string;
  running: AppSandboxSettings | null;
  isolation: string;
  needsRestart: boolean;
  needsRestartReasons: string[];
  liveFields: string[];
  restartFields: string[];
  /** The values backend may take here: auto and the engine's isolating backends. */
  backends: string[];
}

/** AppSandboxReply says exactly what a PUT applied how. */
export interface AppSandboxReply {
  sandbox: AppSandboxView;
  changed: string[];
  appliedLive: string[];
  pendingRestart: string[];
  needsRestart: boolean;
  note: string;
}

export interface HealthPoint {
  atMs: number;
  ok: boolean;
  status?: number;
  latencyMs: number;
  error?: string;
}

export interface AppSocket {
  pid: number;
  /** tcp4, tcp6, udp4, udp6 or unix. */
  kind: string;
  local: string;
  remote?: string;
  /** LISTEN, ESTABLISHED, ..., NONE. */
  state: string;
}

export interface AppLaunch {
  n: number;
  atMs: number;
  runId: string;
  pid: number;
  isolation: string;
  backend: string;
  command: string;
  port: number;
  /** Its environment as the engine set it, secret values masked by the engine. */
  env: Record<string, string>;
  settings: AppSandboxSettings;
  endedAtMs?: number;
  ended?: string;
}

/** AppRuntime is what the Monitor panel shows of one app. */
export interface AppRuntime {
  appId: string;
  state: AppState;
  stateText: string;
  pid: number;
  uptimeSec: number;
  launches: number;
  totalLaunches: number;
  health: AppHealth;
  healthHistory: HealthPoint[];
  cpuPercent: number;
  rssMb: number;
  memoryLimitMb: number;
  history: StatsPoint[];
  processes: ProcessInfo[];
  sockets: AppSocket[];
  socketsTruncated: boolean;
  proxy: { allowed: number; denied: number; recentDenied: string[] };
  launch: AppLaunch | null;
  lastLog: string[];
  note?: string;
}

/** AppIsolation is the effective isolation of an app, in words. */
export interface AppIsolation {
  appId: string;
  running: boolean;
  isolation: string;
  backend: string;
  limits: string[];
  limitsMissing: string[];
  enforced: string[];
  notEnforced: string[];
  note: string;
}

/** AppLog is the end of an app's log. */
export interface AppLog {
  appId: string;
  text: string;
  bytes: number;
  truncated: boolean;
  sizeBytes: number;
  files: string[];
}

export interface AppStartReply {
  ok: boolean;
  note: string;
  app: AppView;
}

const spaceBase = '/api/space/apps';

/** The Space Apps routes the dashboard uses. */
export const spaceApi = {
  /** list is every app, running ones first then by name, with the overview. */
  list: () => get<{ apps: AppView[]; overview: AppsOverview }>('', spaceBase),
  /** start, restart: wait=false answers once launched; the list shows the rest. */
  start: (appId: string, wait = false) => send<AppStartReply>('POST', `/${id(appId)}/start?wait=${wait}`, undefined, spaceBase),
  restart: (appId: string, wait = false) =>
    send<AppStartReply>('POST', `/${id(appId)}/restart?wait=${wait}`, undefined, spaceBase),
  stop: (appId: string) => send<{ ok: boolean; app: AppView }>('POST', `/${id(appId)}/stop`, undefined, spaceBase),
  runtime: (appId: string) => get<AppRuntime>(`/${id(appId)}/runtime`, spaceBase),
  isolation: (appId: string) => get<AppIsolation>(`/${id(appId)}/isolation`, spaceBase),
  /** logs reads the log's last limit bytes (at most 1 MiB). */
  logs: (appId: string, limit: number) => get<AppLog>(`/${id(appId)}/logs?limit=${limit}`, spaceBase),
  clearLogs: (appId: string) => send<{ ok: boolean }>('DELETE', `/${id(appId)}/logs`, undefined, spaceBase),
  sandbox: (appId: string) => get<AppSandboxView>(`/${id(appId)}/sandbox`, spaceBase),
  /** setSandbox changes only the fields it names; a list given replaces the old one. */
  setSandbox: (appId: string, patch: Partial<AppSandboxSettings>) =>
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
