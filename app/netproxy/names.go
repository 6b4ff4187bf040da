package netproxy

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// nameProfile maps a name as a resolver would look it up (UTS #46: case
// folded, full-width forms and the ideographic full stop mapped, IDNA
// labels to Punycode, bidi rule checked). The ASCII check is ours
// (checkLabels): underscores, which real host names carry, pass.
var nameProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.StrictDomainName(false))

// normalizeName is the one normaliser of host names: every rule (allow
// and deny lists, the names of this machine) and the resolver see a name
// only as it returns it, so that no spelling of a name can match one
// thing and resolve to another. It maps the name (nameProfile), drops all
// trailing dots ("example.com.." is example.com), and refuses empty
// labels, characters outside letters, digits, '-' and '_', and a last
// label of digits only (it reads as an address: "127.1").
func normalizeName(raw string) (string, error) {
	ascii, err := nameProfile.ToASCII(raw)
	if err != nil {
		return "", fmt.Errorf("is not a valid domain name: %v", err)
	}
	ascii = strings.TrimRight(ascii, ".")
	if ascii == "" {
		return "", errors.New("is empty")
	}
	if len(ascii) > 253 {
		return "", errors.New("is longer than 253 characters")
	}
	if err := checkLabels(ascii); err != nil {
		return "", err
	}
	return ascii, nil
}

func checkLabels(name string) error {
	labels := strings.Split(name, ".")
	for _, l := range labels {
		switch {
		case l == "":
			return errors.New("is not a valid domain name (an empty label)")
		case len(l) > 63:
			return errors.New("is not a valid domain name (a label longer than 63 characters)")
		case strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-"):
			return errors.New("is not a valid domain name (a label starts or ends with '-')")
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("is not a valid domain name (character %q)", r)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("is not a domain name: its last label is a number, so it reads as an address")
	}
	return nil
}

// isLocalName reports whether name (normalised) always means this
// machine; it is answered without asking any resolver.
func isLocalName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// matchDomain reports whether name (normalised) matches one of the
// patterns (normalised by NormalizeDomains).
func matchDomain(name string, patterns []string) bool {
	for _, p := range patterns {
		if base, ok := strings.CutPrefix(p, "*."); ok {
			if name == base || strings.HasSuffix(name, "."+base) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}
