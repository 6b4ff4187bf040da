package agentshell

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
)

// An install rewrites the whole settings file (with the file's own
// indentation, but every value laid out anew), so taking senclaw's hook
// out again leaves a file that differs from the one the person had. The
// install therefore remembers the file as it found it, in senclaw's
// data dir; a removal that finds the file as the install left it puts
// those bytes back, or removes the file the install created. A file
// changed since is edited as before: only senclaw's hook goes.

// undoRecord is what an install found and wrote.
type undoRecord struct {
	Path       string `json:"path"`
	Existed    bool   `json:"existed"`
	DirExisted bool   `json:"dirExisted"`
	Before     []byte `json:"before,omitempty"`
	After      []byte `json:"after"`
}

// undoFile is where the record of target's install is kept.
func undoFile(dataDir, target string) string {
	sum := sha256.Sum256([]byte(target))
	return filepath.Join(dataDir, "integrations", hex.EncodeToString(sum[:12])+".json")
}

func readUndo(dataDir, target string) (*undoRecord, error) {
	data, err := readBounded(undoFile(dataDir, target))
	if err != nil {
		return nil, err
	}
	var r undoRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Path != target {
		return nil, fs.ErrNotExist // not a record of this file: as if none
	}
	return &r, nil
}

// Remember records what the install c, just written, found and wrote,
// in dataDir ("" keeps nothing); dirExisted says whether the file's
// folder was there before. An install over one senclaw made (a new
// binary path) keeps what the first found.
func Remember(dataDir string, c Change, dirExisted bool) error {
	if dataDir == "" || !c.Changed() {
		return nil
	}
	r := undoRecord{Path: c.Target.Path, Existed: c.Before != nil, DirExisted: dirExisted, Before: c.Before, After: c.After}
	if old, err := readUndo(dataDir, c.Target.Path); err == nil && bytes.Equal(old.After, c.Before) {
		r.Existed, r.DirExisted, r.Before = old.Existed, old.DirExisted, old.Before
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := undoFile(dataDir, c.Target.Path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Undo turns c, a removal planned by Plan, into putting the file back
// as the install found it, when the file is still as the install left
// it: its bytes then, or no file (Delete) when the install made it. It
// reports whether it did.
func Undo(dataDir string, c *Change) bool {
	if dataDir == "" || c.Before == nil {
		return false
	}
	r, err := readUndo(dataDir, c.Target.Path)
	if err != nil || !bytes.Equal(r.After, c.Before) {
		return false
	}
	if r.Existed {
		c.After = r.Before
		c.Notes = []string{"puts the file back as it was before senclaw integrate, byte for byte (nothing else changed it since)"}
	} else {
		c.After, c.Delete, c.DeleteDir = nil, true, !r.DirExisted
		c.Notes = []string{"removes the file, which senclaw integrate created (nothing else changed it since)"}
	}
	return true
}

// Forget drops the record of target's install, once it is removed.
func Forget(dataDir string, target Target) {
	if dataDir != "" {
		_ = os.Remove(undoFile(dataDir, target.Path))
	}
}
