// Package imageref checks container image references as the Docker daemon
// parses them.
//
// A reference is NAME[:TAG][@DIGEST], as in debian:bookworm-slim or
// registry:5000/team/tool@sha256:..., normalised as `docker pull` normalises
// it (a name without a registry is on docker.io). Its expression is compiled
// at the first check, not when the program starts: every CLI process links
// this package and most never check an image.
package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The grammar of a reference (Docker's distribution reference grammar).
const (
	alphanumeric = `[a-z0-9]+`
	separator    = `(?:[._]|__|[-]+)`
	component    = alphanumeric + `(?:` + separator + alphanumeric + `)*`
	domainPart   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	host         = `(?:` + domainPart + `(?:\.` + domainPart + `)*|\[[a-fA-F0-9:]+\])`
	domain       = host + `(?::[0-9]+)?`
	name         = `(?:` + domain + `/)?` + component + `(?:/` + component + `)*`
	tag          = `[\w][\w.-]{0,127}`
	digest       = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	reference    = `^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`
)

// maxPath bounds a repository's path (library/ included, the registry
// not).
const maxPath = 255

var (
	referenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(reference) })
	idRE        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-f0-9]{64}$`) })
)

// digestLengths are the hex lengths of the digest algorithms an image
// digest may use.
var digestLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// Check returns nil when s is an image reference, else an error saying
// what is wrong with it.
func Check(s string) error {
	if idRE().MatchString(s) {
		return errors.New("a 64-character hexadecimal string is an image id, not a reference")
	}
	domain, rest := splitDomain(s)
	repo := rest
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		repo = rest[:i]
	}
	if strings.ToLower(repo) != repo {
		return fmt.Errorf("the repository name %q must be lower case", repo)
	}
	m := referenceRE().FindStringSubmatch(domain + "/" + rest)
	switch {
	case s == "":
		return errors.New("the reference is empty")
	case m == nil:
		return errors.New("invalid reference format")
	case len(m[1])-len(domain)-1 > maxPath:
		return fmt.Errorf("the repository name is longer than %d characters", maxPath)
	case m[3] != "":
		algo, hex, _ := strings.Cut(m[3], ":")
		n, ok := digestLengths[algo]
		if !ok {
			return fmt.Errorf("the digest algorithm %q is not one of sha256, sha384, sha512", algo)
		}
		if len(hex) != n || strings.ToLower(hex) != hex {
			return fmt.Errorf("a %s digest is %d lower-case hexadecimal characters", algo, n)
		}
	}
	return nil
}

// splitDomain splits off the registry as `docker pull` does: the first
// component is one when it has a dot or a port, is localhost, or has
// upper case; otherwise the image is on docker.io (official images under
// library/).
func splitDomain(s string) (domain, rest string) {
	i := strings.IndexByte(s, '/')
	if i < 0 || (!strings.ContainsAny(s[:i], ".:") && s[:i] != "localhost" && strings.ToLower(s[:i]) == s[:i]) {
		domain, rest = "docker.io", s
	} else {
		domain, rest = s[:i], s[i+1:]
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.ContainsRune(rest, '/') {
		rest = "library/" + rest
	}
	return domain, rest
}
