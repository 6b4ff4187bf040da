package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/principal"
)

// The daemon on the LAN (opt-in): the API and /mcp on one more listener,
// over TLS only, to agent and tenant tokens only. The owner's token, the
// dashboard's sessions and login, and the Space Apps' own tokens are
// never taken there: a person's power never crosses the network, and a
// teammate's agent gets exactly what its token holds. Each token is
// rate-limited, and an address that keeps sending tokens nobody has is
// locked out for a while. The engine's proxy refuses its sandboxes the
// listener's address and port, as it does the loopback API: a sandbox
// still never reaches the API.

// The LAN listener's bounds.
const (
	// lanRate and lanBurst bound one token's requests: lanRate a second
	// on average, lanBurst at once.
	lanRate  = 20
	lanBurst = 40
	// lanBadTokens tokens nobody has within lanBadWindow from one
	// address lock it out for lanLockout.
	lanBadTokens = 10
	lanBadWindow = 10 * time.Minute
	lanLockout   = 15 * time.Minute
)

// lanGuard keeps the LAN listener's rate limits and lockouts.
type lanGuard struct {
	now    func() time.Time
	mu     sync.Mutex
	bucket map[string]*tokenBucket // by token id
	bad    map[string]*badTokens   // by remote address
	// warned is when each token was last recorded as rate-limited (one
	// event a minute, not one a request).
	warned map[string]time.Time
}

type tokenBucket struct {
	tokens float64
	at     time.Time
}

type badTokens struct {
	times  []time.Time
	until  time.Time // locked out until
	warned bool
}

func newLANGuard(now func() time.Time) *lanGuard {
	return &lanGuard{now: now, bucket: map[string]*tokenBucket{}, bad: map[string]*badTokens{}, warned: map[string]time.Time{}}
}

// lockedOut reports whether addr is locked out now, until when, and
// whether this is the first refusal of the lockout (worth an event).
func (g *lanGuard) lockedOut(addr string) (bool, time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bad[addr]
	if b == nil || !g.now().Before(b.until) {
		return false, time.Time{}, false
	}
	first := !b.warned
	b.warned = true
	return true, b.until, first
}

// badToken counts a token nobody has from addr and reports whether addr
// is locked out by it.
func (g *lanGuard) badToken(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	b := g.bad[addr]
	if b == nil {
		if len(g.bad) >= 4096 {
			g.sweepLocked(now)
		}
		b = &badTokens{}
		g.bad[addr] = b
	}
	kept := b.times[:0]
	for _, t := range b.times {
		if now.Sub(t) < lanBadWindow {
			kept = append(kept, t)
		}
	}
	b.times = append(kept, now)
	if len(b.times) >= lanBadTokens {
		b.until, b.warned, b.times = now.Add(lanLockout), false, nil
		return true
	}
	return false
}

// sweepLocked forgets addresses with nothing recent. g.mu is held.
func (g *lanGuard) sweepLocked(now time.Time) {
	for a, b := range g.bad {
		if !now.Before(b.until) && (len(b.times) == 0 || now.Sub(b.times[len(b.times)-1]) >= lanBadWindow) {
			delete(g.bad, a)
		}
	}
}

// allow takes one request from token id's bucket: false past its rate;
// warn says whether to record it (once a minute).
func (g *lanGuard) allow(id string) (ok, warn bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	b := g.bucket[id]
	if b == nil {
		b = &tokenBucket{tokens: lanBurst, at: now}
		g.bucket[id] = b
	}
	b.tokens = min(lanBurst, b.tokens+now.Sub(b.at).Seconds()*lanRate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, false
	}
	if now.Sub(g.warned[id]) >= time.Minute {
		g.warned[id] = now
		return false, true
	}
	return false, false
}

// Kinds of the LAN listener's security events.
const (
	secKindLANOwner  = "security.lan_owner_refused"
	secKindLANLocked = "security.lan_locked_out"
	secKindLANRate   = "security.lan_rate_limited"
)

// authorizeLAN decides a request of the LAN listener: an agent's or a
// tenant's token, nothing else.
func (s *Server) authorizeLAN(w http.ResponseWriter, r *http.Request) (principal.Principal, bool) {
	remote, _, _ := net.SplitHostPort(r.RemoteAddr)
	if locked, until, first := s.lan.lockedOut(remote); locked {
		if first {
			s.security(r, principal.Principal{Via: "lan"}, secKindLANLocked, "this address sent too many tokens nobody has; it is locked out until "+until.UTC().Format(time.RFC3339))
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(time.Until(until).Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: "this address sent " + strconv.Itoa(lanBadTokens) + " tokens the engine does not know within " + lanBadWindow.String() + ", and is locked out until " + until.UTC().Format(time.RFC3339) + "; check the token you send"})
		return principal.Principal{}, false
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/mcp" {
		// No dashboard and no login over the network: they are the
		// owner's, who uses the machine itself.
		writeJSON(w, http.StatusNotFound, errorBody{Error: "the LAN listener serves the API (/api/) and /mcp to agent and tenant tokens; the dashboard is the owner's, on this machine (senclaw open)"})
		return principal.Principal{}, false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "a request from a web page (Origin " + strconv.Quote(origin) + ") is refused on the LAN listener: it serves agents with tokens, not browsers"})
		return principal.Principal{}, false
	}
	tok := bearer(r)
	if tok == "" {
		s.lan.badToken(remote)
		s.security(r, principal.Principal{Via: "lan"}, secKindTokenRejected, "no token")
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: "send Authorization: Bearer <token>: an agent token (senclaw tokens add) or a tenant's (senclaw tenants add)"})
		return principal.Principal{}, false
	}
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
		// Not a bad token: the owner's own, in the wrong place.
		s.security(r, principal.Principal{Kind: principal.Owner, Via: "lan"}, secKindLANOwner, "the owner's API token was sent to the LAN listener")
		writeJSON(w, http.StatusForbidden, errorBody{Error: "the owner's API token is never taken on the LAN listener: it would give the network the owner's power over this machine. Give the remote agent a token of its own (senclaw tokens add NAME, or senclaw tenants add NAME), and rotate the API token if it was sent over a network you do not trust"})
		return principal.Principal{}, false
	}
	var p principal.Principal
	ok := false
	if s.opts.Tokens != nil {
		p, ok = s.opts.Tokens.Verify(tok)
	}
	if !ok {
		locked := s.lan.badToken(remote)
		reason := "a token the engine does not know"
		if locked {
			reason += "; the address is now locked out for " + lanLockout.String()
		}
		s.security(r, principal.Principal{Via: "lan"}, secKindTokenRejected, reason)
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: "the token is not one the engine knows (removed, rotated, or never made); " + strconv.Itoa(lanBadTokens) + " of them within " + lanBadWindow.String() + " lock this address out"})
		return principal.Principal{}, false
	}
	p.Via = "lan"
	if allowed, warn := s.lan.allow(p.TokenID); !allowed {
		if warn {
			s.security(r, p, secKindLANRate, fmt.Sprintf("more than %d requests a second (%d at once)", lanRate, lanBurst))
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: fmt.Sprintf("this token sends more than %d requests a second (%d at once) to the LAN listener; slow down", lanRate, lanBurst)})
		return principal.Principal{}, false
	}
	return p, true
}

// listenLAN opens the LAN listener: TLS on o.LAN, with the owner's
// certificate or one the engine makes and keeps in o.LANDir. The
// engine's proxy refuses the listener's address to every sandbox.
func (s *Server) listenLAN(o DaemonOptions) (net.Listener, LANInfo, error) {
	host, portText, err := net.SplitHostPort(o.LAN)
	if err != nil {
		return nil, LANInfo{}, fmt.Errorf("--lan %q: use ADDR:PORT, e.g. 192.168.1.20:7879", o.LAN)
	}
	ip, perr := netip.ParseAddr(host)
	if host != "" && perr != nil {
		return nil, LANInfo{}, fmt.Errorf("--lan %q: the address must be an IP address of this machine (or 0.0.0.0 for all of them), not a name", o.LAN)
	}
	if perr == nil && ip.IsLoopback() {
		return nil, LANInfo{}, fmt.Errorf("--lan %q is a loopback address: the LAN listener is for other machines; this one has the socket and --listen", o.LAN)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, LANInfo{}, fmt.Errorf("--lan %q: the port must be 1 to 65535", o.LAN)
	}
	cert, err := lanCertificate(o, host)
	if err != nil {
		return nil, LANInfo{}, err
	}
	l, err := net.Listen("tcp", o.LAN)
	if err != nil {
		return nil, LANInfo{}, fmt.Errorf("listening on %s: %w", o.LAN, err)
	}
	ap, _ := netip.ParseAddrPort(l.Addr().String())
	if s.e != nil {
		s.e.ProtectLAN(ap)
	}
	sum := sha256.Sum256(cert.Certificate[0])
	info := LANInfo{URL: "https://" + l.Addr().String(), Fingerprint: fingerprint(sum[:])}
	tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	return tl, info, nil
}

// fingerprint writes a certificate's SHA-256 as people compare it.
func fingerprint(sum []byte) string {
	h := strings.ToUpper(hex.EncodeToString(sum))
	parts := make([]string, 0, len(h)/2)
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// lanCertificate is the owner's key pair (TLSCert, TLSKey), or the one in
// LANDir, made the first time: an ECDSA P-256 key, for the owner alone.
func lanCertificate(o DaemonOptions, host string) (tls.Certificate, error) {
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return tls.Certificate{}, errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("loading the TLS key pair: %w", err)
		}
		return cert, nil
	}
	if o.LANDir == "" {
		return tls.Certificate{}, errors.New("the LAN listener needs a certificate: give --tls-cert and --tls-key, or a config dir to keep the one the engine makes")
	}
	certFile, keyFile := filepath.Join(o.LANDir, "lan-cert.pem"), filepath.Join(o.LANDir, "lan-key.pem")
	if cert, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return cert, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	name, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "senclaw engine " + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(2, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		tmpl.IPAddresses = []net.IP{ip}
	}
	if name != "" {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(o.LANDir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	if err := writePrivate(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return tls.Certificate{}, err
	}
	if err := writePrivate(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certFile, keyFile)
}

// writePrivate writes data to path for the owner alone (0600), replacing
// what was there.
func writePrivate(path string, data []byte) error {
	tmp := path + ".new"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
