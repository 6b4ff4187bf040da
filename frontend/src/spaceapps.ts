// What the Space Apps card derives from an app's view: whether it runs,
// its state in words, how rows sort and filter. Pure functions of the
// engine's AppView.

import type { AppSandboxSummary, AppView } from './api';
import { until } from './format';

/** SortKey is a sortable column; running is the engine's order (running
 * apps first, then by name). */
export type SortKey = 'running' | 'name' | 'sandbox' | 'network' | 'process' | 'usage';

/** isNone reports whether an isolation means no barrier ("none",
 * "none (degraded)", "none (outside the engine)"). */
export function isNone(isolation: string): boolean {
  return isolation === 'none' || isolation.startsWith('none ');
}

/** noSandbox says why an app's sandbox is off, as `senclaw apps ls` does:
 * "no sandbox (manifest)" when its manifest says enabled: false, "no
 * sandbox (owner)" when a person turned it off; "" when it is on. */
export function noSandbox(sb: AppSandboxSummary): string {
  if (sb.enabled) return '';
  return sb.disabledBy ? `no sandbox (${sb.disabledBy})` : 'no sandbox';
}

/** running reports whether a launch of the engine runs now (its process
 * has a pid and the Sandbox column says what it got). */
export function running(a: AppView): boolean {
  return a.pid > 0 && (a.state === 'starting' || a.state === 'running' || a.state === 'stopping');
}

/** supervised reports whether the engine keeps it going (Stop is offered
 * rather than Start): running, or waiting to restart it. */
export function supervised(a: AppView): boolean {
  return running(a) || a.state === 'backoff';
}

/** stateWords says a state that is not plain "running" in words: "port
 * taken by PID 42 (python3 -m http.server)", "backoff: exited with code
 * 1; next attempt in 4 s". */
export function stateWords(a: AppView, now: number): string {
  switch (a.state) {
    case 'backoff': {
      const why = a.stateText.replace(/; restarting in .*$/, '');
      const next = a.nextAttemptAtMs ? `next attempt ${until(new Date(a.nextAttemptAtMs).toISOString(), now)}` : 'restarting soon';
      return `${why}; ${next}`;
    }
    case 'port-taken':
      return a.portHolder ? `port ${a.port} taken by PID ${a.portHolder.pid} (${a.portHolder.command})` : a.stateText;
    case 'outside':
      return a.portHolder
        ? `running outside the engine: PID ${a.portHolder.pid} (${a.portHolder.command}) holds port ${a.port}`
        : a.stateText;
    case 'stopped':
      return a.stoppedByUser ? 'stopped by a person: not restarted, and skipped by autostart' : a.stateText || 'stopped';
  }
  return a.stateText || a.state;
}

/** stateClass is the badge colour of a state. */
export function stateClass(a: AppView): string {
  switch (a.state) {
    case 'running':
      return a.health.status === 'failing' ? 'warn' : 'ok';
    case 'starting':
    case 'stopping':
      return 'info';
    case 'backoff':
    case 'outside':
      return 'warn';
    case 'crash-looping':
    case 'failed':
    case 'port-taken':
      return 'bad';
  }
  return 'off';
}

// The summary's network is a plain string on the wire: an unknown one sorts last.
const networkOrder: Record<string, number> = { all: 0, hosts: 1, off: 2 };

type Key = (string | number)[];

function sortKey(key: SortKey, a: AppView): Key {
  const up = running(a);
  switch (key) {
    case 'name':
      return [a.name.toLowerCase(), a.id];
    case 'sandbox':
      // What the running process got, then the configuration.
      return [up ? 0 : 1, up ? a.sandbox.isolation : '', a.sandbox.enabled ? 0 : 1];
    case 'network':
      return [networkOrder[a.sandbox.network] ?? 3, a.sandbox.hostCount, a.sandbox.denied];
    case 'process':
      return [up ? 1 : 0, a.uptimeSec, a.launches];
    case 'usage':
      return [a.cpuPercent, a.rssMb];
  }
  return [];
}

/** compareApps orders a and b by the column key, ascending; ties go by
 * name. */
export function compareApps(key: SortKey, a: AppView, b: AppView): number {
  const ka = sortKey(key, a);
  const kb = sortKey(key, b);
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] < kb[i]) return -1;
    if (ka[i] > kb[i]) return 1;
  }
  return key === 'name' ? 0 : compareApps('name', a, b);
}

/** matches reports whether a filter text matches an app's name, id,
 * description or state. */
export function matches(a: AppView, q: string): boolean {
  const t = q.trim().toLowerCase();
  if (!t) return true;
  return [a.name, a.id, a.description, a.state, a.stateText].some((s) => s.toLowerCase().includes(t));
}
