package api

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreateToken reads the API token at path, creating a random one
// (0600, in a 0700 dir) the first time. The token is the owner's whole
// power over the engine, so its place is checked first (token_unix.go):
// a folder of another user, a link, or one others may change is refused
// (they could have handed the engine a token of theirs); a token others
// could read, or a file that is not the user's plain private file, is
// replaced by a new token, and replaced says so (they may know the old
// one, which must stop working). A new token is written to
// a file of its own and renamed into place, so that a reader who opened
// the old file never reads the new one through it.
func LoadOrCreateToken(path string) (tok string, replaced bool, err error) {
	replace, err := checkTokenPlace(path)
	if err != nil {
		return "", false, err
	}
	if !replace {
		if data, err := os.ReadFile(path); err == nil {
			if tok := strings.TrimSpace(string(data)); len(tok) >= 32 {
				return tok, false, nil
			}
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("creating %s: %w", dir, err)
	}
	tok = RandomToken()
	f, err := os.CreateTemp(dir, ".api-token-*")
	if err != nil {
		return "", false, fmt.Errorf("writing the API token: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", false, err
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("writing the API token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("writing the API token: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", false, fmt.Errorf("writing the API token: %w", err)
	}
	return tok, replace, nil
}
