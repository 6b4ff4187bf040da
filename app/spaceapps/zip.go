package spaceapps

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Limits of a zip upload, checked on its directory before anything is
// extracted.
const (
	MaxZipBytes      = 50 << 20
	MaxUnzippedBytes = 512 << 20
	MaxZipEntries    = 20000
	// MaxZipFolders bounds the folders a zip makes: those it names and
	// those its entries' names imply (a/b/c.txt makes a and a/b).
	MaxZipFolders = 10000
	// MaxDepth bounds how many names deep an entry lies, folders and
	// its own name counted (a/b/c.txt is 3), in a zip and in a folder an
	// app is copied from.
	MaxDepth = 32
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
	zr, err := openZip(tmp, n)
	if err != nil {
		return nil, err
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

// openZip reads the zip's directory once it is known to hold at most
// MaxZipEntries entries: archive/zip keeps every entry it finds (some
// 300 bytes of memory each) before planZip can count them, and a zip of
// MaxZipBytes made of empty entries with one-letter names holds a
// million.
func openZip(r io.ReaderAt, size int64) (*zip.Reader, error) {
	switch n := countEntries(r, size, countedEntries); {
	case n >= countedEntries:
		return nil, bad("zip", nil, "has more than %d entries; at most %d", countedEntries, MaxZipEntries)
	case n > MaxZipEntries:
		return nil, bad("zip", nil, "has %d entries; at most %d", n, MaxZipEntries)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, bad("zip", nil, "is not a zip archive: %v", err)
	}
	return zr, nil
}

// countedEntries is how many entries openZip counts before it stops.
const countedEntries = 4 * MaxZipEntries

// Signatures and sizes of the zip format's records.
const (
	zipEndSig      = 0x06054b50 // end of central directory
	zipEndLen      = 22
	zip64LocSig    = 0x07064b50 // zip64 end of central directory locator
	zip64LocLen    = 20
	zip64EndSig    = 0x06064b50 // zip64 end of central directory
	zip64EndLen    = 56
	zipDirEntrySig = 0x02014b50 // central directory file header
	zipDirEntryLen = 46
)

// countEntries counts, up to limit, the central directory entries that
// archive/zip's reader would read from r: it finds the directory as that
// reader does (the end record in the file's last 65 KiB, its zip64
// record, the offset of data prepended to the archive) and counts the
// headers that follow one another from there, at both places the reader
// may start; a directory it cannot find counts 0 (the reader refuses
// it, or reads what this could not count: nothing is refused on a
// guess).
func countEntries(r io.ReaderAt, size int64, limit int) int {
	var end []byte
	endAt := int64(-1)
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return 0
		}
		for i := len(buf) - zipEndLen; i >= 0; i-- {
			if binary.LittleEndian.Uint32(buf[i:]) == zipEndSig {
				if int(binary.LittleEndian.Uint16(buf[i+zipEndLen-2:]))+zipEndLen+i <= len(buf) {
					end, endAt = buf[i:], size-n+int64(i)
				}
				break
			}
		}
		if end != nil || n == size {
			break
		}
	}
	if end == nil {
		return 0
	}
	records := uint64(binary.LittleEndian.Uint16(end[10:]))
	dirSize := uint64(binary.LittleEndian.Uint32(end[12:]))
	dirOff := uint64(binary.LittleEndian.Uint32(end[16:]))
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		loc := make([]byte, zip64LocLen)
		if endAt >= zip64LocLen {
			if _, err := r.ReadAt(loc, endAt-zip64LocLen); err != nil {
				return 0
			}
			if binary.LittleEndian.Uint32(loc) == zip64LocSig && binary.LittleEndian.Uint32(loc[4:]) == 0 && binary.LittleEndian.Uint32(loc[16:]) == 1 {
				at := binary.LittleEndian.Uint64(loc[8:])
				rec := make([]byte, zip64EndLen)
				if at > math.MaxInt64 {
					return 0
				}
				if _, err := r.ReadAt(rec, int64(at)); err != nil || binary.LittleEndian.Uint32(rec) != zip64EndSig {
					return 0
				}
				dirSize, dirOff, endAt = binary.LittleEndian.Uint64(rec[40:]), binary.LittleEndian.Uint64(rec[48:]), int64(at)
			}
		}
	}
	if dirSize > math.MaxInt64 || dirOff > math.MaxInt64 {
		return 0
	}
	base := endAt - int64(dirSize) - int64(dirOff)
	n := 0
	for _, start := range []int64{base + int64(dirOff), int64(dirOff)} {
		if start >= 0 && start < size {
			n = max(n, countHeaders(io.NewSectionReader(r, start, size-start), limit))
		}
	}
	return n
}

// countHeaders counts, up to limit, the central directory headers that
// follow one another at the start of r.
func countHeaders(r io.Reader, limit int) int {
	br := bufio.NewReader(r)
	var h [zipDirEntryLen]byte
	n := 0
	for n < limit {
		if _, err := io.ReadFull(br, h[:]); err != nil || binary.LittleEndian.Uint32(h[:]) != zipDirEntrySig {
			break
		}
		rest := int(binary.LittleEndian.Uint16(h[28:])) + int(binary.LittleEndian.Uint16(h[30:])) + int(binary.LittleEndian.Uint16(h[32:]))
		if d, err := br.Discard(rest); err != nil || d != rest {
			break
		}
		n++
	}
	return n
}

// countedFolders is how many folders planZip counts before it stops.
const countedFolders = 4 * MaxZipFolders

// zipPlan is what a zip makes, as its directory says: the folders (named
// or implied, parents before their children) and the files.
type zipPlan struct {
	folders []string
	files   []*zip.File
	names   []string // the files' clean names
}

// planZip checks every entry of zr and the bounds of the whole (entries,
// depth, folders, unpacked size) before anything is extracted, refusing
// entries that are links, special files, absolute, or that climb out
// with "..". Its work is linear in the directory: a name is at most
// MaxDepth deep when its folders are counted.
func planZip(zr *zip.Reader) (*zipPlan, error) {
	if n := len(zr.File); n > MaxZipEntries {
		return nil, bad("zip", nil, "has %d entries; at most %d", n, MaxZipEntries)
	}
	p := &zipPlan{}
	folders := map[string]bool{}
	files := map[string]bool{}
	var total uint64
	for _, f := range zr.File {
		name := f.Name
		mode := f.Mode()
		switch {
		case strings.ContainsRune(name, 0) || strings.Contains(name, `\`):
			return nil, bad("zip", clip(name), "has an entry with a NUL byte or a backslash in its name")
		case path.IsAbs(name) || filepath.IsAbs(name) || strings.HasPrefix(name, "/"):
			return nil, bad("zip", clip(name), "has an entry with an absolute path, which would leave the app's folder")
		}
		clean := path.Clean(name)
		if clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "../") || strings.HasSuffix(name, "/..") {
			return nil, bad("zip", clip(name), "has an entry that climbs out of the app's folder with ..")
		}
		dir := mode.IsDir() || strings.HasSuffix(name, "/")
		switch {
		case mode&os.ModeSymlink != 0:
			return nil, bad("zip", clip(name), "has a link, which is refused: it could lead outside the app's folder")
		case !dir && !mode.IsRegular():
			return nil, bad("zip", clip(name), "is not a regular file or folder")
		case clean == ".":
			continue
		}
		if depth := strings.Count(clean, "/") + 1; depth > MaxDepth {
			return nil, bad("zip", clip(name), "is %d levels deep (its folders and its own name); at most %d", depth, MaxDepth)
		}
		// Every folder on the way, then the entry itself if a folder.
		for i := 0; i < len(clean); i++ {
			if clean[i] == '/' {
				folders[clean[:i]] = true
			}
		}
		if dir {
			folders[clean] = true
		}
		if len(folders) > countedFolders {
			// Counting on would only hold more names.
			return nil, bad("zip", nil, "makes more than %d folders, named or implied by its entries' names; at most %d", countedFolders, MaxZipFolders)
		}
		if dir {
			continue
		}
		if files[clean] {
			return nil, bad("zip", clip(name), "has two entries of this name")
		}
		files[clean] = true
		if total += f.UncompressedSize64; total < f.UncompressedSize64 {
			total = math.MaxUint64 // past any bound
		}
		p.files = append(p.files, f)
		p.names = append(p.names, clean)
	}
	if n := len(folders); n > MaxZipFolders {
		return nil, bad("zip", nil, "makes %d folders, named or implied by its entries' names; at most %d", n, MaxZipFolders)
	}
	if total > MaxUnzippedBytes {
		return nil, bad("zip", nil, "unpacks to %.1f MiB, as its entries' sizes say; at most %d MiB", float64(total)/(1<<20), MaxUnzippedBytes>>20)
	}
	for f := range files {
		if folders[f] {
			return nil, bad("zip", clip(f), "is both a file and a folder in the zip")
		}
	}
	for f := range folders {
		p.folders = append(p.folders, f)
	}
	// A folder's name is a prefix of its children's: sorted, parents come
	// first.
	slices.Sort(p.folders)
	return p, nil
}

// clip shortens a name for an error: a zip's names may be 64 KiB long.
func clip(name string) string {
	const shown = 80
	if len(name) <= shown {
		return name
	}
	return strings.ToValidUTF8(name[:shown], "") + "…"
}

// unzip extracts zr into dst through an os.Root of it, once planZip has
// accepted all of it.
func unzip(zr *zip.Reader, dst string) error {
	p, err := planZip(zr)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, d := range p.folders {
		if err := root.Mkdir(d, 0o755); err != nil {
			return bad("zip", clip(d), "could not be extracted: %v", err)
		}
	}
	for i, f := range p.files {
		if err := extract(root, p.names[i], f); err != nil {
			return err
		}
	}
	return nil
}

func extract(root *os.Root, name string, f *zip.File) error {
	rc, err := f.Open()
	if err != nil {
		return bad("zip", clip(f.Name), "could not be read: %v", err)
	}
	defer rc.Close()
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, f.Mode().Perm()|0o600)
	if err != nil {
		return bad("zip", clip(f.Name), "could not be extracted: %v", err)
	}
	// The declared size bounds the copy: a lying header cannot fill the disk.
	_, err = io.Copy(out, io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return bad("zip", clip(f.Name), "could not be extracted: %v", err)
	}
	return nil
}
