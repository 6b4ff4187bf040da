package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd"
)

// MaxConns bounds the proxy connections one sandbox holds open at once.
// Each costs the engine a descriptor and some memory, and sandboxed code
// must not be able to exhaust either; a connection over the bound is
// closed at once and counted as a refusal.
const MaxConns = 512

// Serve answers connections from sandbox id on l until l is closed. The
// first byte tells the protocol: 5 is SOCKS5, anything else HTTP.
func (p *Proxy) Serve(l net.Listener, id string) {
	slots := make(chan struct{}, MaxConns)
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			p.recordDenial(id, "(proxy)", fmt.Sprintf("more than %d connections open at once", MaxConns))
			continue
		}
		go func() {
			defer func() { <-slots }()
			p.handle(c, id)
		}()
	}
}

func (p *Proxy) handle(c net.Conn, id string) {
	br := bufio.NewReaderSize(c, MaxHeadBytes)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if first[0] == 5 {
		p.socks(c, br, id)
		return
	}
	p.http(c, br, id)
}

// bufferedConn reads what the bufio.Reader already holds before the
// connection itself.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite passes a half-close on.
func (b *bufferedConn) CloseWrite() error {
	if hc, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return nil
}

func withBuffer(c net.Conn, br *bufio.Reader) net.Conn {
	if br.Buffered() == 0 {
		return c
	}
	return &bufferedConn{Conn: c, r: io.MultiReader(io.LimitReader(br, int64(br.Buffered())), c)}
}

// http serves HTTP proxy requests: CONNECT tunnels, and absolute-form
// plain HTTP requests, keeping the client's connection alive.
func (p *Proxy) http(c net.Conn, br *bufio.Reader, id string) {
	defer c.Close()
	var up net.Conn
	var upBr *bufio.Reader
	var upKey string
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		if err := bufferHead(br); err != nil {
			if errors.Is(err, errHeadTooLarge) {
				p.recordDenial(id, "(proxy)", "a request head "+err.Error())
				httpError(c, http.StatusRequestHeaderFieldsTooLarge, "SenClaw's proxy refused a request head "+err.Error())
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			httpError(c, http.StatusBadRequest, "SenClaw's proxy could not read the request: "+err.Error())
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		ctx := context.Background()
		if req.Method == http.MethodConnect {
			host, port, err := splitHostPort(req.Host, 0)
			if err != nil {
				httpError(c, http.StatusBadRequest, "bad CONNECT target "+strconv.Quote(req.Host))
				return
			}
			ap, err := p.decide(ctx, id, host, port)
			if err != nil {
				httpFail(c, err)
				return
			}
			if tg, look, err := p.lookInto(id, host, port, ap); err != nil {
				httpFail(c, err)
				return
			} else if look {
				if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
					return
				}
				p.intercept(withBuffer(c, br), tg)
				return
			}
			t, err := dial(ctx, ap)
			if err != nil {
				httpError(c, http.StatusBadGateway, fmt.Sprintf("could not connect to %s (%s): %v", req.Host, ap, err))
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				t.Close()
				return
			}
			if tg, look, err := p.lookInside(ctx, id, host, port, ap, c, br); err != nil || look {
				t.Close()
				if look {
					p.intercept(withBuffer(c, br), tg)
				}
				return
			}
			netfwd.Relay(withBuffer(c, br), t)
			return
		}
		if !req.URL.IsAbs() || req.URL.Scheme != "http" {
			httpError(c, http.StatusBadRequest, "this is SenClaw's proxy: send absolute-form http:// requests, or CONNECT for anything else")
			return
		}
		host, port, err := splitHostPort(req.URL.Host, 80)
		if err != nil {
			httpError(c, http.StatusBadRequest, "bad target "+strconv.Quote(req.URL.Host))
			return
		}
		ap, err := p.decide(ctx, id, host, port)
		if err != nil {
			httpFail(c, err)
			return
		}
		key := ap.String() + "|" + host
		if up == nil || upKey != key {
			if up != nil {
				up.Close()
			}
			if up, err = dial(ctx, ap); err != nil {
				up = nil
				httpError(c, http.StatusBadGateway, fmt.Sprintf("could not connect to %s (%s): %v", req.URL.Host, ap, err))
				return
			}
			upBr, upKey = bufio.NewReaderSize(up, MaxHeadBytes), key
		}
		for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"} {
			req.Header.Del(h)
		}
		if ref := p.judgePlain(id, req, host, port); ref != nil {
			refusePlain(c, ref)
			return
		}
		req.RequestURI = ""
		if err := req.Write(up); err != nil {
			if sb := bodyRefused(req, err); sb != nil {
				ref := p.bodyRefusal(sb, req.Method, req.URL.Path, target{id: id, host: canonicalHost(host), port: port})
				p.refuse(id, *ref)
				refusePlain(c, ref)
			}
			return
		}
		resp, err := readAnswer(upBr, req)
		if err != nil {
			msg := "no valid answer from " + req.URL.Host
			switch {
			case errors.Is(err, errHeadTooLarge):
				msg = "the answer of " + req.URL.Host + " has a head " + err.Error()
			case errors.Is(err, errTooManyInterim):
				msg = req.URL.Host + " " + err.Error()
			}
			httpError(c, http.StatusBadGateway, msg)
			return
		}
		err = resp.Write(c)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}

// judgePlain applies the HTTP rules and the secrets' placeholders to a
// plain HTTP request (the proxy sees all of it): a refusal is counted
// and returned. Its body is read through the placeholder scan.
func (p *Proxy) judgePlain(id string, req *http.Request, host string, port int) *Refusal {
	rules, ok := p.opts.Rules(id)
	if !ok {
		return &Refusal{Kind: KindHTTP, Host: host, Port: port, Method: req.Method, Path: req.URL.Path, Rule: "the sandbox no longer exists"}
	}
	name := canonicalHost(host)
	if ref := checkRequest(rules.Ports.AllowHTTP, name, port, req); ref != nil {
		p.refuse(id, *ref)
		return ref
	}
	if ref, _, _ := p.secretsInHead(req, rules.Secrets, name, port, false); ref != nil {
		p.refuse(id, *ref)
		return ref
	}
	if err := scanBody(req, bodyTokens(rules.Secrets, name, port, false)); err != nil {
		var sb *secretInBody
		if errors.As(err, &sb) {
			ref := p.bodyRefusal(sb, req.Method, req.URL.Path, target{id: id, host: name, port: port})
			p.refuse(id, *ref)
			return ref
		}
		return &Refusal{Kind: KindHTTP, Host: name, Port: port, Method: req.Method, Path: req.URL.Path, Rule: "the request body could not be read: " + err.Error()}
	}
	if p.opts.OnRequest != nil && rules.looksInto(name, port) {
		p.opts.OnRequest(id, name, port, req.Method, req.URL.Path)
	}
	return nil
}

// canonicalHost is host as the rules see it (an address literal in its
// one spelling, a name normalised); a host that does not normalise is
// kept as it is (decide refused it already).
func canonicalHost(host string) string {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.Unmap().String()
	}
	if n, err := normalizeName(host); err == nil {
		return n
	}
	return host
}

// refusePlain answers a refused plain HTTP request as refuseHTTP does.
func refusePlain(c net.Conn, ref *Refusal) {
	line := ref.Rule
	if ref.Allow != "" {
		line += "; to allow it: " + ref.Allow
	}
	body := fmt.Sprintf("SenClaw refused %s %s%s: %s\n", ref.Method, hostPort(ref.Host, ref.Port), ref.Path, line)
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Senclaw-Proxy: refused\r\nX-Senclaw-Refused: %s\r\n\r\n%s",
		len(body), headerSafe(line), body)
}

// httpFail answers a refusal with 403 naming the host and the rule, and
// any other failure with 502.
func httpFail(c net.Conn, err error) {
	var d *Denied
	if errors.As(err, &d) {
		httpError(c, http.StatusForbidden, d.Error())
		return
	}
	httpError(c, http.StatusBadGateway, err.Error())
}

func httpError(c io.Writer, code int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Senclaw-Proxy: refused\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

func splitHostPort(hp string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		// No port given: the scheme's default, if there is one.
		host = strings.Trim(hp, "[]")
		if defPort == 0 || host == "" {
			return "", 0, err
		}
		return host, defPort, nil
	}
	port, err := strconv.Atoi(ps)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("bad port in %q", hp)
	}
	return host, port, nil
}
