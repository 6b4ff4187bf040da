package netfwd

// NodePreloadSource is NodePreload: it routes Node's built-in fetch
// (undici), http and https through the in-sandbox HTTP proxy with
// CONNECT tunnels, since Node 20 ignores the proxy variables. Hosts in
// NO_PROXY go direct.
const NodePreloadSource = `'use strict';
// SenClaw: route Node's network through the sandbox's proxy.
const net = require('net'), tls = require('tls'), http = require('http'), https = require('https');
const PROXY_PORT = Number(process.env.SENCLAW_PROXY_PORT || 3128);
const noProxy = String(process.env.NO_PROXY || process.env.no_proxy || '').split(',').map(s => s.trim().toLowerCase()).filter(Boolean);
function bypass(host) {
  host = String(host || '').toLowerCase().replace(/^\[|\]$/g, '');
  return noProxy.some(n => n === '*' || host === n || (n.startsWith('.') ? host.endsWith(n) : host.endsWith('.' + n)));
}
function tunnel(host, port, cb) {
  const s = net.connect(PROXY_PORT, '127.0.0.1');
  let buf = Buffer.alloc(0), done = false;
  const fail = (e) => { if (!done) { done = true; s.destroy(); cb(e); } };
  s.once('error', fail);
  s.on('connect', () => {
    const hp = host.includes(':') ? '[' + host + ']:' + port : host + ':' + port;
    s.write('CONNECT ' + hp + ' HTTP/1.1\r\nHost: ' + hp + '\r\n\r\n');
  });
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    s.removeListener('data', onData);
    s.removeListener('error', fail);
    const head = buf.slice(0, end).toString();
    const rest = buf.slice(end + 4);
    if (!/^HTTP\/1\.[01] 200/.test(head)) {
      done = true; s.destroy();
      const e = new Error(head.split('\r\n')[0] + ': ' + rest.toString().trim());
      e.code = 'ECONNREFUSED'; return cb(e);
    }
    if (rest.length) s.unshift(rest);
    done = true; cb(null, s);
  };
  s.on('data', onData);
}
function agentFor(base, secure) {
  const a = new base.Agent({ keepAlive: true });
  const orig = a.createConnection.bind(a);
  a.createConnection = function (opts, cb) {
    const host = opts.host || opts.hostname || 'localhost';
    const port = Number(opts.port) || (secure ? 443 : 80);
    if (bypass(host)) return orig(opts, cb);
    tunnel(host, port, (err, sock) => {
      if (err) return cb(err);
      if (!secure) return cb(null, sock);
      const t = tls.connect(Object.assign({}, opts, { socket: sock, servername: opts.servername || (net.isIP(host) ? undefined : host) }));
      t.once('secureConnect', () => cb(null, t));
      t.once('error', cb);
    });
  };
  return a;
}
http.globalAgent = agentFor(http, false);
https.globalAgent = agentFor(https, true);
try {
  // Node's fetch is undici: its Agent class is reachable through the
  // global dispatcher, and its connect option takes our tunnel.
  if (typeof fetch === 'function') {
    fetch().catch(() => {});
    const sym = Symbol.for('undici.globalDispatcher.1');
    const Agent = globalThis[sym] && globalThis[sym].constructor;
    if (Agent) {
      globalThis[sym] = new Agent({ connect(opts, cb) {
        const host = opts.hostname, secure = opts.protocol === 'https:';
        const port = Number(opts.port) || (secure ? 443 : 80);
        const direct = () => {
          const s = secure ? tls.connect({ host, port, servername: opts.servername || host, ALPNProtocols: ['http/1.1'] }) : net.connect(port, host);
          s.once(secure ? 'secureConnect' : 'connect', () => cb(null, s)); s.once('error', cb);
        };
        if (bypass(host)) return direct();
        tunnel(host, port, (err, sock) => {
          if (err) return cb(err);
          if (!secure) return cb(null, sock);
          const t = tls.connect({ socket: sock, servername: opts.servername || (net.isIP(host) ? undefined : host), ALPNProtocols: ['http/1.1'] });
          t.once('secureConnect', () => cb(null, t)); t.once('error', cb);
        });
      } });
    }
  }
} catch (e) {}
`
