// Package proxyca is the engine's own certificate authority, for the proxy's TLS interception.
//
// The proxy terminates TLS only for the hosts the owner asked it to look
// into (those of a secret or of an HTTP rule), with a certificate for that
// host signed by this authority, which sandboxes trust and nothing else
// does. As in mitmproxy, the authority is one per install, made at its
// first use; its key is an owner-only file of the config dir, which no
// sandbox sees, and the certificates it signs are short-lived (a day),
// kept in memory per host and made again before they run out.
package proxyca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/ownerfile"
)

// Files in the authority's directory.
const (
	CertFile = "proxy-ca.pem"
	KeyFile  = "proxy-ca-key.pem"
)

// Lifetimes.
const (
	caLifetime   = 5 * 365 * 24 * time.Hour
	caRenewal    = 30 * 24 * time.Hour
	leafLifetime = 24 * time.Hour
	// leafRenewal is how long before its end a cached leaf is made anew,
	// so that no connection gets one about to run out.
	leafRenewal = 2 * time.Hour
	// backdate covers clocks a little behind ours.
	backdate = time.Hour
)

// Authority signs the proxy's certificates. Create it with New; it makes
// or loads its key at first use. Its methods are safe for concurrent use.
type Authority struct {
	dir string
	now func() time.Time

	mu      sync.Mutex
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	caPEM   []byte
	leafKey *ecdsa.PrivateKey
	leaves  map[string]*tls.Certificate
	// bundle is Bundle's answer, made once per authority.
	bundle []byte
}

// New returns the authority kept in dir (the owner-only config dir);
// nil now is time.Now.
func New(dir string, now func() time.Time) *Authority {
	if now == nil {
		now = time.Now
	}
	return &Authority{dir: dir, now: now, leaves: map[string]*tls.Certificate{}}
}

// CertPEM returns the authority's certificate (PEM), making the
// authority if there is none yet.
func (a *Authority) CertPEM() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ready(); err != nil {
		return nil, err
	}
	return a.caPEM, nil
}

// ready loads or makes the authority (a.mu held).
func (a *Authority) ready() error {
	if a.ca != nil && a.now().Before(a.ca.NotAfter.Add(-caRenewal)) {
		return nil
	}
	if a.dir == "" {
		return errors.New("no config dir to keep the proxy's certificate authority in: set XDG_CONFIG_HOME or HOME")
	}
	cert, key, certPEM, err := load(a.dir)
	if err == nil && a.now().Before(cert.NotAfter.Add(-caRenewal)) {
		a.ca, a.caKey, a.caPEM = cert, key, certPEM
	} else {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the proxy's certificate authority in %s: %w", a.dir, err)
		}
		if err := a.make(); err != nil {
			return fmt.Errorf("making the proxy's certificate authority: %w", err)
		}
	}
	if a.leafKey == nil {
		if a.leafKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
	}
	a.leaves = map[string]*tls.Certificate{}
	a.bundle = nil
	return nil
}

// load reads the authority from dir.
func load(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	keyPEM, err := ownerfile.Read(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return nil, nil, nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(certPEM)
	if kb == nil || cb == nil {
		return nil, nil, nil, errors.New("its files are not PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("its key: %w", err)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("its certificate: %w", err)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, nil, errors.New("its certificate is not its key's")
	}
	return cert, key, certPEM, nil
}

// make creates a new authority and writes it to a.dir: the key first,
// exclusively (an older key is moved aside, never overwritten in place).
func (a *Authority) make() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := a.now()
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"SenClaw Sandbox"}, CommonName: "SenClaw Sandbox proxy CA (" + host + ")"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	keyPath, certPath := filepath.Join(a.dir, KeyFile), filepath.Join(a.dir, CertFile)
	for _, p := range []string{keyPath, certPath} {
		if _, err := os.Lstat(p); err == nil {
			_ = os.Rename(p, p+".old")
		}
	}
	if err := ownerfile.Create(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})); err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := ownerfile.Create(certPath, certPEM); err != nil {
		return err
	}
	a.ca, a.caKey, a.caPEM = cert, key, certPEM
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}

// Leaf returns a certificate for host (a name, or an address literal)
// signed by the authority, from the cache while it has more than
// leafRenewal left.
func (a *Authority) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.Trim(host, "[]"))
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ready(); err != nil {
		return nil, err
	}
	now := a.now()
	if c := a.leaves[host]; c != nil && now.Before(c.Leaf.NotAfter.Add(-leafRenewal)) {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"SenClaw Sandbox proxy"}, CommonName: host},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.ca, &a.leafKey.PublicKey, a.caKey)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.ca.Raw}, PrivateKey: a.leafKey, Leaf: leaf}
	if len(a.leaves) >= maxCachedLeaves {
		a.leaves = map[string]*tls.Certificate{}
	}
	a.leaves[host] = c
	return c, nil
}

// maxCachedLeaves bounds the cache: hosts are what sandboxes ask for.
const maxCachedLeaves = 4096

// systemRoots are where Linux distributions keep the trusted roots, as
// Go's crypto/x509 looks for them.
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// Bundle is this machine's trusted roots (PEM) followed by the
// authority's certificate: what a sandbox's TLS clients are pointed at.
func (a *Authority) Bundle() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ready(); err != nil {
		return nil, err
	}
	if a.bundle != nil {
		return a.bundle, nil
	}
	ca := a.caPEM
	var roots []byte
	for _, p := range systemRoots {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			roots = b
			break
		}
	}
	out := make([]byte, 0, len(roots)+len(ca)+64)
	out = append(out, roots...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "# SenClaw Sandbox proxy CA: the engine's proxy signs the hosts it looks into\n"...)
	a.bundle = append(out, ca...)
	return a.bundle, nil
}
