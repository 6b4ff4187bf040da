import { describe, expect, it } from 'vitest';
import { ago, count, duration, ended, limits, mb, ports, until, uptime, zeroTime } from './format';

const now = Date.parse('2025-06-01T12:00:00Z');
const before = (s: number) => new Date(now - s * 1000).toISOString();
const after = (s: number) => new Date(now + s * 1000).toISOString();

describe('zeroTime and ago', () => {
  it('takes Go zero time and nothing as never', () => {
    expect(zeroTime(undefined)).toBe(true);
    expect(zeroTime('')).toBe(true);
    expect(zeroTime('0001-01-01T00:00:00Z')).toBe(true);
    expect(zeroTime(before(1))).toBe(false);
    expect(ago('0001-01-01T00:00:00Z', now)).toBe('never');
    expect(ago(undefined, now)).toBe('never');
  });
  it.each([
    [0, '0 s ago'],
    [59, '59 s ago'],
    [60, '1 min ago'],
    [3599, '59 min ago'],
    [3600, '1 h ago'],
    [47 * 3600, '47 h ago'],
    [48 * 3600, '2 days ago'],
  ])('%i s before now is %s', (s, want) => {
    expect(ago(before(s), now)).toBe(want);
  });
  it('says a time in the future (a skewed clock) is 0 s ago', () => {
    expect(ago(after(30), now)).toBe('0 s ago');
  });
});

describe('until', () => {
  it.each([
    [-5, 'now'],
    [0, 'now'],
    [12, 'in 12 s'],
    [90, 'in 2 min'],
    [2 * 3600, 'in 2 h'],
    [3 * 86400, 'in 3 days'],
  ])('%i s after now is %s', (s, want) => {
    expect(until(after(s), now)).toBe(want);
  });
});

describe('duration', () => {
  it.each([
    [12, '0.012 s'],
    [3400, '3.40 s'],
    [12_500, '12.5 s'],
    [60_000, '1 min'],
    [125_000, '2 min 5 s'],
  ])('%i ms is %s', (ms, want) => {
    expect(duration(ms)).toBe(want);
  });
});

describe('sizes and limits', () => {
  it.each([
    [512, '512 MB'],
    [1024, '1 GB'],
    [4096, '4 GB'],
    [1536, '1.5 GB'],
  ])('%i MB is %s', (n, want) => {
    expect(mb(n)).toBe(want);
  });
  it('sums up a sandbox in one line, naming a missing disk quota', () => {
    expect(limits({ cpus: 2, memoryMb: 1024, pids: 256, diskMb: 0, timeoutMs: 30_000 })).toBe(
      '2 CPU · 1 GB · 256 procs · no disk quota · 30.0 s timeout',
    );
    expect(limits({ cpus: 1, memoryMb: 512, pids: 64, diskMb: 2048, timeoutMs: 5000 })).toBe(
      '1 CPU · 512 MB · 64 procs · 2 GB disk · 5.00 s timeout',
    );
  });
  it('says none for no ports, whether empty, null or absent', () => {
    expect(ports([])).toBe('none');
    expect(ports(null)).toBe('none');
    expect(ports(undefined)).toBe('none');
    expect(ports([8080, 9000])).toBe('8080, 9000');
  });
  it('counts in the singular only for one', () => {
    expect(count(0, 'sandbox', 'sandboxes')).toBe('0 sandboxes');
    expect(count(1, 'sandbox', 'sandboxes')).toBe('1 sandbox');
    expect(count(3, 'sandbox', 'sandboxes')).toBe('3 sandboxes');
  });
});

describe('uptime', () => {
  it.each([
    [45, '45 s'],
    [12 * 60, '12 min'],
    [3 * 3600, '3 h'],
    [3 * 3600 + 5 * 60, '3 h 5 min'],
    [48 * 3600, '2 d'],
    [52 * 3600, '2 d 4 h'],
  ])('%i s is %s', (s, want) => {
    expect(uptime(s)).toBe(want);
  });
});

describe('ended', () => {
  it.each([
    ['restarted by a person', 'restarted'],
    ['restarted by a person (killed after the stop timeout)', 'restarted'],
    ['stopped', 'stopped'],
    ['stopped by a person', 'stopped'],
    ['stopped with the engine', 'stopped'],
    ['killed by signal KILL', 'killed'],
    ['disk quota: 2 GB used', 'killed'],
    ['killed by the owner (senclaw kill r-1)', 'killed'],
    ['the engine stopped while the run was going; its processes ended with it', 'killed'],
    ['no 2xx on /health within 30 s', 'killed'],
  ])('%s is %s', (killed, want) => {
    expect(ended(killed)).toBe(want);
  });
});
