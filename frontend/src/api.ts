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
  lastUsedAt: string;
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

function listParams(q: ListQuery): string {
  const p = new URLSearchParams({ limit: String(q.limit), offset: String(q.offset) });
  if (q.q.trim()) p.set('q', q.q.trim());
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

function token(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="senclaw-token"]')?.content ?? '';
}

/** Fetched is a body with its raw text, so that pollers can tell "same as
 * last time" without comparing objects. */
export interface Fetched<T> {
  text: string;
  data: T;
}

async function call(method: string, path: string, body?: unknown): Promise<string> {
  let res: Response;
  try {
    res = await fetch(base + path, {
      method,
      headers: {
        Authorization: 'Bearer ' + token(),
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiError('the engine does not answer: ' + String(err), 0);
  }
  const text = await res.text();
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

async function get<T>(path: string): Promise<Fetched<T>> {
  const text = await call('GET', path);
  return { text, data: JSON.parse(text) as T };
}

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const text = await call(method, path, body);
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
  runs: (q: ListQuery) => get<RunPage>('/runs?' + listParams(q)),
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
