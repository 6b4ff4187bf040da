// SenClaw trace hook for Node (preloaded with NODE_OPTIONS=--require by
// the engine for traced runs on backends that cannot trace from outside).
// It records file opens, writes, process starts and connections as NDJSON
// lines in $SENCLAW_TRACE_FILE, which the engine collects after the run.
// It runs inside the sandbox: the code it watches can change or remove
// it, so its events are labelled "in-sandbox (can be tampered with)".
// It must never change the program's behaviour: failures are swallowed.
'use strict';
(() => {
  const file = process.env.SENCLAW_TRACE_FILE;
  if (!file) return;
  const fs = require('fs');
  const path = require('path');
  let fd;
  try {
    fd = fs.openSync(file, 'a', 0o600);
  } catch {
    return;
  }
  const writeSync = fs.writeSync;
  let depth = 0;

  const emit = (kind, target, detail) => {
    if (target == null) return;
    try {
      const line = JSON.stringify({ tsMs: Date.now(), pid: process.pid, kind, target: String(target), detail: detail ? String(detail) : '' });
      writeSync(fd, line + '\n');
    } catch {}
  };
  const where = (p) => {
    try {
      if (p == null || typeof p === 'number') return null;
      if (p instanceof URL) p = require('url').fileURLToPath(p);
      return path.resolve(String(p));
    } catch {
      return null;
    }
  };
  const writes = (flags) => {
    if (flags == null) return false;
    if (typeof flags === 'number') {
      const c = fs.constants;
      return (flags & (c.O_WRONLY | c.O_RDWR | c.O_CREAT | c.O_TRUNC)) !== 0;
    }
    if (typeof flags === 'object') return writes(flags.flags);
    return /[wa+]/.test(String(flags));
  };
  // wrap replaces obj[name] with a function that reports, then calls the
  // original; calls made inside it (readFileSync opening a file) are not
  // reported twice.
  const wrap = (obj, name, report) => {
    const orig = obj && obj[name];
    if (typeof orig !== 'function') return;
    const wrapped = function (...args) {
      if (depth === 0) {
        try { report(args, this); } catch {}
      }
      depth++;
      try {
        return orig.apply(this, args);
      } finally {
        depth--;
      }
    };
    Object.defineProperty(wrapped, 'name', { value: orig.name });
    obj[name] = wrapped;
  };
  const opened = (a) => emit(writes(a[1]) ? 'file.write' : 'file.read', where(a[0]), writes(a[1]) ? 'opened ' + a[1] : '');
  for (const api of [fs, fs.promises]) {
    for (const n of ['open', 'openSync']) wrap(api, n, opened);
    for (const n of ['readFile', 'readFileSync', 'createReadStream']) wrap(api, n, (a) => emit('file.read', where(a[0])));
    for (const n of ['writeFile', 'writeFileSync', 'appendFile', 'appendFileSync', 'createWriteStream', 'truncate', 'truncateSync'])
      wrap(api, n, (a) => emit('file.write', where(a[0]), n.replace(/Sync$/, '')));
    for (const n of ['rename', 'renameSync']) wrap(api, n, (a) => emit('file.write', where(a[1]), 'renamed from ' + where(a[0])));
    for (const n of ['unlink', 'unlinkSync', 'rm', 'rmSync']) wrap(api, n, (a) => emit('file.write', where(a[0]), 'deleted'));
    for (const n of ['rmdir', 'rmdirSync']) wrap(api, n, (a) => emit('file.write', where(a[0]), 'removed directory'));
    for (const n of ['mkdir', 'mkdirSync']) wrap(api, n, (a) => emit('file.write', where(a[0]), 'created directory'));
  }
  const cp = require('child_process');
  wrap(cp.ChildProcess.prototype, 'spawn', (a) => {
    const o = a[0] || {};
    emit('proc.spawn', o.file, (o.args || []).join(' '));
  });
  for (const n of ['spawnSync', 'execFileSync']) wrap(cp, n, (a) => emit('proc.spawn', a[0], [a[0]].concat(Array.isArray(a[1]) ? a[1] : []).join(' ')));
  wrap(cp, 'execSync', (a) => emit('proc.spawn', '/bin/sh', 'sh -c ' + a[0]));
  const net = require('net');
  wrap(net.Socket.prototype, 'connect', (a) => {
    let o = a[0];
    if (Array.isArray(o)) o = o[0];
    if (typeof o === 'object' && o !== null) {
      emit('net.connect', o.path ? 'unix:' + o.path : (o.host || 'localhost') + ':' + o.port, 'attempt');
    } else if (typeof o === 'string' && isNaN(Number(o))) {
      emit('net.connect', 'unix:' + o, 'attempt');
    } else {
      emit('net.connect', (typeof a[1] === 'string' ? a[1] : 'localhost') + ':' + o, 'attempt');
    }
  });
  try {
    require('module').syncBuiltinESMExports();
  } catch {}
})();
