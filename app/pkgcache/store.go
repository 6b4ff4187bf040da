package pkgcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Store is the engine's folder of projects' caches (<data dir>/caches):
// per project a folder named by its key, holding owner.json (whose
// caches they are; out of the sandbox's reach) and cache/, the folder
// bound at Root in the project's runs.
type Store struct{ Dir string }

// Owner says whose caches a key's are.
type Owner struct {
	// Project is the project folder's canonical path.
	Project string `json:"project"`
}

// Cache is one project's caches as listed.
type Cache struct {
	Key     string `json:"key"`
	Project string `json:"project"`
	// Dir is the folder bound into the project's runs.
	Dir   string `json:"dir"`
	Bytes int64  `json:"bytes"`
	Files int64  `json:"files"`
}

// Ensure makes the caches of key (the project's), recording owner, and
// returns the folder to bind. Folders are the engine's own, and no other
// local user's to read: a project's caches hold its private packages
// and modules, and a key is the hash of a path anyone may know. The
// folders above the cache are traversable, not listable (0711), for a
// root engine's sandbox user, which reaches the cache (0700) through an
// idmapped mount as its owner, as it does a tenant's workspace.
func (s Store) Ensure(key string, owner Owner) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("a cache key %q", key)
	}
	top := filepath.Join(s.Dir, key)
	dir := filepath.Join(top, "cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the package caches: %w", err)
	}
	// Set each time: earlier versions made them 0755.
	for d, mode := range map[string]os.FileMode{s.Dir: 0o711, top: 0o711, dir: 0o700} {
		if err := os.Chmod(d, mode); err != nil {
			return "", fmt.Errorf("making the package caches: %w", err)
		}
	}
	meta := filepath.Join(top, "owner.json")
	if _, err := os.Lstat(meta); errors.Is(err, fs.ErrNotExist) {
		b, _ := json.Marshal(owner)
		if err := os.WriteFile(meta, b, 0o600); err != nil {
			return "", fmt.Errorf("making the package caches: %w", err)
		}
	}
	return dir, nil
}

// CacheDir returns the folder of key's caches ("" when there is none).
func (s Store) CacheDir(key string) string {
	if !validKey(key) {
		return ""
	}
	dir := filepath.Join(s.Dir, key, "cache")
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// List lists the projects' caches with what they hold.
func (s Store) List() ([]Cache, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Cache
	for _, e := range entries {
		dir := s.CacheDir(e.Name())
		if dir == "" {
			continue
		}
		c := Cache{Key: e.Name(), Dir: dir}
		var o Owner
		if b, err := os.ReadFile(filepath.Join(s.Dir, e.Name(), "owner.json")); err == nil && json.Unmarshal(b, &o) == nil {
			c.Project = o.Project
		}
		if f, err := openDir(dir); err == nil {
			c.Bytes, c.Files = Usage(f)
			f.Close()
		}
		out = append(out, c)
	}
	return out, nil
}

// Clear empties key's caches; the folder stays, so that runs going on
// keep a cache to write.
func (s Store) Clear(key string) error {
	dir := s.CacheDir(key)
	if dir == "" {
		return nil
	}
	f, err := openDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return Empty(f)
}

// Remove removes key's caches whole.
func (s Store) Remove(key string) error {
	if !validKey(key) {
		return nil
	}
	if err := s.Clear(key); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(s.Dir, key))
}

// validKey reports whether key names a cache folder of the Store's:
// letters, digits and '-', as ProjectKey makes.
func validKey(key string) bool {
	if key == "" || len(key) > 64 || strings.HasPrefix(key, "-") {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
