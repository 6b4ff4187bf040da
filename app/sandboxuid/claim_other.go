//go:build !unix

package sandboxuid

import "errors"

// ClaimsDir is unused off Unix, where no engine runs as root.
const ClaimsDir = ""

// Claim is a range this engine holds on this machine.
type Claim struct{}

// ClaimedError says that another engine holds a block of a range.
type ClaimedError struct {
	Range Range
	By    string
}

func (e *ClaimedError) Error() string {
	return "the uids " + e.Range.String() + " are another engine's"
}

// ClaimRange needs Unix.
func ClaimRange(dir string, r Range, who string) (*Claim, error) {
	return nil, errors.New("sandbox uid ranges need Linux")
}

// Release lets the range go.
func (c *Claim) Release() {}

// Free needs Unix.
func Free(dir string, r Range, who string) string { return "" }

// Forget needs Unix.
func Forget(dir string, r Range, who string) error { return nil }
