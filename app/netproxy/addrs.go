package netproxy

import (
	"net"
	"net/netip"
	"time"
)

var (
	metadataV4   = netip.MustParseAddr("169.254.169.254")
	metadataV6   = netip.MustParseAddr("fd00:ec2::254")
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	thisNet      = netip.MustParsePrefix("0.0.0.0/8")
	ietfProtocol = netip.MustParsePrefix("192.0.0.0/24")
	benchmark    = netip.MustParsePrefix("198.18.0.0/15")
	siteLocal    = netip.MustParsePrefix("fec0::/10")
	// IPv6 forms that carry an IPv4 address (see embeddedV4).
	v4Compatible = netip.MustParsePrefix("::/96")
	v4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	teredo       = netip.MustParsePrefix("2001::/32")
)

// classify says why a is not a public address, or "" when it is. own are
// this machine's interface addresses with their prefixes: the machine's
// own addresses and its on-link neighbours are not public to a sandbox,
// whatever their range. An IPv6 address that carries an IPv4 address
// (NAT64, 6to4, Teredo, ISATAP, the IPv4-compatible and -translated
// forms) is judged by that address too: a gateway or relay on the way
// may deliver it there.
func classify(a netip.Addr, own []netip.Prefix) string {
	a = a.Unmap()
	if why := classifyOne(a, own); why != "" {
		return why
	}
	if nat64Local.Contains(a) {
		// Its operator picks where the IPv4 address sits: fail closed.
		return "a local-use NAT64 address (64:ff9b:1::/48)"
	}
	for _, v4 := range embeddedV4(a) {
		if why := classifyOne(v4, own); why != "" {
			return "an address carrying " + v4.String() + ", " + why
		}
	}
	return ""
}

func classifyOne(a netip.Addr, own []netip.Prefix) string {
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.IsLoopback():
		return "a loopback address (this machine)"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "an unspecified address (this machine)"
	case a == metadataV4 || a == metadataV6:
		return "a cloud metadata address"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsPrivate() || siteLocal.Contains(a):
		return "a private network address"
	case cgnat.Contains(a):
		return "a shared (carrier-grade NAT) address"
	case ietfProtocol.Contains(a):
		return "an IETF protocol address (192.0.0.0/24)"
	case benchmark.Contains(a):
		return "a benchmarking network address"
	case a.IsMulticast() || a.IsInterfaceLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a multicast or broadcast address"
	}
	for _, p := range own {
		switch {
		case p.Addr().Unmap() == a:
			return "an address of this machine"
		case p.Contains(a):
			// An interface with a very wide prefix makes much of the
			// network local: failing closed is the right way to be wrong.
			return "on this machine's own network (" + p.Masked().String() + ")"
		}
	}
	return ""
}

// embeddedV4 returns the IPv4 addresses an IPv6 address a carries.
func embeddedV4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(i int, flip byte) netip.Addr {
		return netip.AddrFrom4([4]byte{b[i] ^ flip, b[i+1] ^ flip, b[i+2] ^ flip, b[i+3] ^ flip})
	}
	var out []netip.Addr
	switch {
	case v4Compatible.Contains(a), v4Translated.Contains(a), nat64.Contains(a):
		out = append(out, v4(12, 0)) // ::a.b.c.d, ::ffff:0:a.b.c.d, 64:ff9b::a.b.c.d
	case sixToFour.Contains(a):
		out = append(out, v4(2, 0)) // 2002:AABB:CCDD::/48 is a.b.c.d's
	case teredo.Contains(a):
		out = append(out, v4(4, 0), v4(12, 0xff)) // the server, and the client (its bits flipped)
	}
	// ISATAP: an interface identifier of 0000:5efe (or 0200:5efe) and
	// the IPv4 address, under any prefix.
	if b[8]&^0x03 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(12, 0))
	}
	return out
}

// hostLoopback reports whether a may serve a loopback rule: only the two
// loopback addresses themselves.
func hostLoopback(a netip.Addr) bool {
	a = a.Unmap()
	return a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback()
}

// ownNets are this machine's interface addresses with their prefixes,
// refreshed every 30 s.
func (p *Proxy) ownNets() []netip.Prefix {
	if p.opts.LocalNets != nil {
		return p.opts.LocalNets()
	}
	p.ownMu.Lock()
	defer p.ownMu.Unlock()
	if time.Since(p.ownTime) < 30*time.Second {
		return p.own
	}
	p.own = p.own[:0]
	if as, err := net.InterfaceAddrs(); err == nil {
		for _, a := range as {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil {
				p.own = append(p.own, netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()))
			}
		}
	}
	p.ownTime = time.Now()
	return p.own
}
