// Formatting for people: times, durations, sizes, limits.

/** zeroTime reports whether an RFC 3339 time is Go's zero time (never). */
export function zeroTime(t: string | undefined): boolean {
  return !t || t.startsWith('0001-01-01');
}

/** ago says how long before now t was: "12 s ago", "3 min ago", "never". */
export function ago(t: string | undefined, now: number): string {
  if (zeroTime(t)) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(t!)) / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} days ago`;
}

/** duration formats milliseconds in seconds: "0.012 s", "3.40 s",
 * "12.5 s", "2 min 5 s". */
export function duration(ms: number): string {
  const sec = ms / 1000;
  if (sec < 0.1) return `${sec.toFixed(3)} s`;
  if (sec < 10) return `${sec.toFixed(2)} s`;
  if (ms < 60_000) return `${sec.toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return s ? `${m} min ${s} s` : `${m} min`;
}

/** mb formats megabytes: "512 MB", "4 GB". */
export function mb(n: number): string {
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} GB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} GB`;
  return `${n} MB`;
}

/** limits summarizes a sandbox's limits in one short line. */
export function limits(l: { cpus: number; memoryMb: number; pids: number; diskMb: number; timeoutMs: number }): string {
  const parts = [`${l.cpus} CPU`, mb(l.memoryMb), `${l.pids} procs`];
  parts.push(l.diskMb > 0 ? `${mb(l.diskMb)} disk` : 'no disk quota');
  parts.push(`${duration(l.timeoutMs)} timeout`);
  return parts.join(' · ');
}

/** ports formats a port list; empty is "none". */
export function ports(list: number[] | null | undefined): string {
  return list && list.length ? list.join(', ') : 'none';
}

/** count says "1 sandbox", "3 sandboxes". */
export function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** until says how long after now t is: "in 12 s", "in 3 min", "in 2 h". */
export function until(t: string, now: number): string {
  const s = Math.round((Date.parse(t) - now) / 1000);
  if (s <= 0) return 'now';
  if (s < 60) return `in ${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `in ${m} min`;
  const h = Math.round(m / 60);
  if (h < 48) return `in ${h} h`;
  return `in ${Math.round(h / 24)} days`;
}

/** uptime formats seconds: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function uptime(sec: number): string {
  if (sec < 60) return `${sec} s`;
  const m = Math.floor(sec / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** ended sums up why the engine ended a run (a record's killed) in a word:
 * "restarted" when a Space App's supervisor or a person restarted it,
 * "stopped" when someone stopped it, and "killed" for the rest (a
 * timeout's kill, the disk quota, a signal, the engine's own end). */
export function ended(killed: string): 'restarted' | 'stopped' | 'killed' {
  if (/^restarted\b/.test(killed)) return 'restarted';
  if (/^stopped\b/.test(killed)) return 'stopped';
  return 'killed';
}
