package spaceapps

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits of a zip upload.
const (
	MaxZipBytes      = 50 << 20
	MaxUnzippedBytes = 512 << 20
	MaxZipEntries    = 20000
)

// RegisterZip registers (or updates) the app in a zip archive (at most
// MaxZipBytes): senclaw-app.json at its root, or in its one top folder.
// Entries that would leave the app's folder (absolute, with ..) and links
// are refused, and nothing is registered.
func (s *Supervisor) RegisterZip(ctx context.Context, body io.Reader, env map[string]string) (*RegisterReply, error) {
	release, err := s.stageSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	tmp, err := os.CreateTemp(s.dirs.staging, "upload-*.zip")
	if err != nil {
		return nil, fmt.Errorf("receiving the zip: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, io.LimitReader(body, MaxZipBytes+1))
	if err != nil {
		var mbe interface{ Error() string }
		if errors.As(err, &mbe) && strings.Contains(err.Error(), "too large") {
			return nil, bad("zip", nil, "is larger than %d MiB", MaxZipBytes>>20)
		}
		return nil, fmt.Errorf("receiving the zip: %w", err)
	}
	if n > MaxZipBytes {
		return nil, bad("zip", nil, "is larger than %d MiB", MaxZipBytes>>20)
	}
	zr, err := zip.NewReader(tmp, n)
	if err != nil {
		return nil, bad("zip", nil, "is not a zip archive: %v", err)
	}
	stage, err := s.stage("upload")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	if err := unzip(zr, stage); err != nil {
		return nil, err
	}
	dir := stage
	if _, err := os.Stat(filepath.Join(stage, ManifestFile)); err != nil {
		// A zip of a folder: the manifest is in its one top folder.
		entries, _ := os.ReadDir(stage)
		if len(entries) == 1 && entries[0].IsDir() {
			dir = filepath.Join(stage, entries[0].Name())
		}
	}
	m, _, err := ReadManifest(dir)
	if err != nil {
		var fe interface{ Error() string }
		if errors.As(err, &fe) && strings.Contains(err.Error(), "has no "+ManifestFile) {
			return nil, bad("zip", nil, "has no %s at its root (nor in its one top folder)", ManifestFile)
		}
		return nil, err
	}
	return s.register(ctx, m, env, "zip upload", dir, false)
}

// unzip extracts zr into dst through an os.Root of it, refusing entries
// that are links, special files, absolute, or that climb out with "..".
func unzip(zr *zip.Reader, dst string) error {
	if len(zr.File) > MaxZipEntries {
		return bad("zip", len(zr.File), "has more than %d entries", MaxZipEntries)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	var total int64
	for _, f := range zr.File {
		name := f.Name
		mode := f.Mode()
		switch {
		case strings.ContainsRune(name, 0) || strings.Contains(name, `\`):
			return bad("zip", name, "has an entry with a NUL byte or a backslash in its name")
		case path.IsAbs(name) || filepath.IsAbs(name) || strings.HasPrefix(name, "/"):
			return bad("zip", name, "has an entry with an absolute path, which would leave the app's folder")
		}
		clean := path.Clean(name)
		if clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "../") || strings.HasSuffix(name, "/..") {
			return bad("zip", name, "has an entry that climbs out of the app's folder with ..")
		}
		switch {
		case mode&os.ModeSymlink != 0:
			return bad("zip", name, "has a link, which is refused: it could lead outside the app's folder")
		case mode.IsDir() || strings.HasSuffix(name, "/"):
			if err := root.MkdirAll(clean, 0o755); err != nil {
				return bad("zip", name, "could not be extracted: %v", err)
			}
			continue
		case !mode.IsRegular():
			return bad("zip", name, "is not a regular file or folder")
		}
		if total += int64(f.UncompressedSize64); total > MaxUnzippedBytes || f.UncompressedSize64 > MaxUnzippedBytes {
			return bad("zip", nil, "unpacks to more than %d MiB", MaxUnzippedBytes>>20)
		}
		if d := path.Dir(clean); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return bad("zip", name, "could not be extracted: %v", err)
			}
		}
		if err := extract(root, clean, f); err != nil {
			return err
		}
	}
	return nil
}

func extract(root *os.Root, name string, f *zip.File) error {
	rc, err := f.Open()
	if err != nil {
		return bad("zip", f.Name, "could not be read: %v", err)
	}
	defer rc.Close()
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, f.Mode().Perm()|0o600)
	if err != nil {
		return bad("zip", f.Name, "could not be extracted (a duplicate entry?): %v", err)
	}
	// The declared size bounds the copy: a lying header cannot fill the disk.
	_, err = io.Copy(out, io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return bad("zip", f.Name, "could not be extracted: %v", err)
	}
	return nil
}
