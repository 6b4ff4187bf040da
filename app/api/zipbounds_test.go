package api

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestZipUploadsAreBoundedBeforeExtracting: a zip posted to the API is
// refused, in under a second and before anything is extracted, when it
// would make too many folders (the ones its entries' names imply count),
// go deeper than 32 levels, have too many entries or unpack to too much;
// the answer names the bound and the numbers (past 40,000 folders it
// stops counting). A normal app's zip still installs.
func TestZipUploadsAreBoundedBeforeExtracting(t *testing.T) {
	t.Parallel()
	base, e, _ := spaceServer(t)
	manifest, err := os.ReadFile("../../examples/space-apps/senclaw-app.json")
	if err != nil {
		t.Fatal(err)
	}
	server, err := os.ReadFile("../../examples/space-apps/app.py")
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		name string
		data []byte
		// size, when set, is the uncompressed size the header claims.
		size uint64
	}
	build := func(entries ...entry) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, en := range entries {
			if en.size > 0 {
				h := &zip.FileHeader{Name: en.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(en.data),
					CompressedSize64: uint64(len(en.data)), UncompressedSize64: en.size}
				w, err := zw.CreateRaw(h)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(en.data)
				continue
			}
			w, err := zw.CreateHeader(&zip.FileHeader{Name: en.name, Method: zip.Deflate})
			if err != nil {
				t.Fatal(err)
			}
			w.Write(en.data)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	app := []entry{{name: "notes/senclaw-app.json", data: manifest}, {name: "notes/app.py", data: server}}
	// The folder bomb: in the app's folder, few entries whose long names
	// imply 100,000 nested folders.
	var bomb []entry
	for i := range 4 {
		bomb = append(bomb, entry{name: fmt.Sprintf("notes/b%d/", i) + strings.Repeat("d/", 25000) + "f", data: []byte("x")})
	}
	var wide []entry
	for i := range 6000 {
		wide = append(wide, entry{name: fmt.Sprintf("notes/w%d/x/f", i), data: []byte("x")})
	}
	var deepWide []entry
	for i := range 2000 {
		deepWide = append(deepWide, entry{name: fmt.Sprintf("notes/c%d/", i) + strings.Repeat("d/", 25) + "f", data: []byte("x")})
	}
	var many []entry
	for i := range 20001 {
		many = append(many, entry{name: fmt.Sprintf("f%d", i)})
	}
	cases := []struct {
		name string
		zip  []byte
		says []string
	}{
		{"folder_bomb", build(append(app, bomb...)...), []string{"25003 levels deep", "at most 32"}},
		{"depth_33", build(append(app, entry{name: "notes/" + strings.Repeat("d/", 31) + "f", data: []byte("x")})...), []string{"33 levels deep", "at most 32"}},
		{"implied_folders", build(append(app, wide...)...), []string{"12001 folders", "named or implied", "at most 10000"}},
		{"counting_stops", build(append(app, deepWide...)...), []string{"more than 40000 folders", "at most 10000"}},
		{"entries", build(append(app, many...)...), []string{"20003 entries", "at most 20000"}},
		{"unpacked_size", build(append(app, entry{name: "notes/big", data: []byte("small"), size: 600 << 20})...), []string{"unpacks to 600.0 MiB", "at most 512 MiB"}},
	}
	post := func(body []byte) (int, map[string]any, time.Duration) {
		req, _ := http.NewRequest("POST", base+"/api/space/apps", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/zip")
		start := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out map[string]any
		json.Unmarshal(data, &out)
		return resp.StatusCode, out, took
	}
	staging, apps := filepath.Join(e.DataDir(), "app-staging"), filepath.Join(e.DataDir(), "apps")
	for _, c := range cases {
		status, body, took := post(c.zip)
		msg := fmt.Sprint(body["error"])
		t.Logf("%s: %d bytes, %d in %v: %s", c.name, len(c.zip), status, took, msg)
		if status != 400 || !strings.Contains(msg, "zip") {
			t.Errorf("%s: %d %v", c.name, status, body)
		}
		for _, s := range c.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: the error does not say %q: %s", c.name, s, msg)
			}
		}
		if took > time.Second {
			t.Errorf("%s: refused after %v", c.name, took)
		}
	}
	for _, dir := range []string{staging, apps} {
		if n := countEntries(dir); n != 1 {
			t.Errorf("refused zips left %d files and folders in %s", n-1, dir)
		}
	}
	if status, body, _ := post(build(app...)); status != 201 {
		t.Fatalf("a normal app's zip: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(apps, "notes", "app.py")); err != nil {
		t.Errorf("the normal app was not installed: %v", err)
	}
}

// countEntries counts what lies under dir.
func countEntries(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(string, os.DirEntry, error) error { n++; return nil })
	return n
}
