package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// pythonImage is the test image with a Python and a Node of its own: a
// script that says it ran, a link to it, and a runtime library.
func pythonImage(t *testing.T) string {
	t.Helper()
	requireDocker(t)
	cli := testClient(t)
	tag := "senclaw-test/busybox-interpreters:" + randomHex(4)
	script := "#!/bin/sh\necho INTERPRETER-RAN\n"
	err := importBusybox(context.Background(), cli, tag, func(tw *tar.Writer) {
		for _, d := range []string{"usr/", "usr/bin/", "usr/lib/"} {
			_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
		}
		for _, f := range []string{"usr/bin/python3.11", "usr/bin/node"} {
			_ = tw.WriteHeader(&tar.Header{Name: f, Mode: 0o755, Size: int64(len(script))})
			_, _ = tw.Write([]byte(script))
		}
		lib := "LIBPYTHON-CONTENT\n"
		_ = tw.WriteHeader(&tar.Header{Name: "usr/lib/libpython3.11.so.1.0", Mode: 0o644, Size: int64(len(lib))})
		_, _ = tw.Write([]byte(lib))
		_ = tw.WriteHeader(&tar.Header{Name: "usr/bin/python3", Typeflag: tar.TypeSymlink, Linkname: "python3.11"})
		_ = tw.WriteHeader(&tar.Header{Name: "bin/py", Typeflag: tar.TypeSymlink, Linkname: "/usr/bin/python3"})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImage(cli, tag) })
	return tag
}

// With a runtime switched off, the image's own interpreters are masked
// in its containers: none starts, by name, path, link or copy, and its
// library reads as nothing. The scan of the
// image is done once.
func TestMaskedRuntimesCannotStartInAContainer(t *testing.T) {
	t.Parallel()
	img := pythonImage(t)
	b := newTestBackend(t, nil)
	attempts := strings.Join([]string{
		"python3", "/usr/bin/python3.11", "py", "sh -c python3", "node",
		"cp /usr/bin/python3.11 /work/copy; chmod +x /work/copy; /work/copy",
		"cat /usr/lib/libpython3.11.so.1.0",
		"echo end",
	}, "\n")
	for _, oneShot := range []bool{false, true} {
		open := newSpec(t, b, "sh", "-c", attempts)
		open.Image, open.OneShot = img, oneShot
		if r := run(t, b, open); strings.Count(r.stdout, "INTERPRETER-RAN") != 6 || !strings.Contains(r.stdout, "LIBPYTHON") {
			t.Fatalf("one-shot %v, without masks: %q %q: the test proves nothing", oneShot, r.stdout, r.stderr)
		}
		masked := newSpec(t, b, "sh", "-c", attempts)
		masked.Image, masked.OneShot = img, oneShot
		masked.MaskedRuntimes = []string{backends.RuntimePython, backends.RuntimeNode}
		if r := run(t, b, masked); r.stdout != "end\n" {
			t.Errorf("one-shot %v, with the runtimes off: %q (stderr %q)", oneShot, r.stdout, r.stderr)
		}
	}
	if n := len(b.scans.files); n != 1 {
		t.Errorf("the image was scanned for %d keys, want 1", n)
	}
}

// An image the scan cannot list (it has no shell to list it with) is
// refused, not run unmasked.
func TestMaskedRuntimesRefuseAnImageThatCannotBeScanned(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	cli := testClient(t)
	tag := "senclaw-test/no-shell:" + randomHex(4)
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	// busybox under another name: no /bin/sh, no find.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "bin/tool", Mode: 0o755, Size: int64(len(bin))})
	_, _ = tw.Write(bin)
	_ = tw.Close()
	if err := importImage(context.Background(), cli, &buf, tag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImage(cli, tag) })
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "sh", "-c", "echo ran")
	spec.Image = tag
	spec.MaskedRuntimes = []string{backends.RuntimePython}
	if _, err := b.Start(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "Run Python is switched off") {
		t.Fatalf("start = %v, want a refusal naming the switch", err)
	}
}

// Masks are read-only binds of /dev/null, after every other mount, and
// they change the config hash (a sandbox's container is recreated when a
// switch changes), while a shape without masks hashes as it always did.
func TestMasksInTheCreateConfig(t *testing.T) {
	t.Parallel()
	s, err := shapeOf(goldenSpec(), &Options{}, "d")
	if err != nil {
		t.Fatal(err)
	}
	plain := s.hash()
	s.Masked = []string{"/usr/bin/python3.11", "/work/sys/python3.11"}
	if s.hash() == plain {
		t.Error("masks do not change the config hash")
	}
	_, host := containerConfig(s, nil, "{}")
	ms := host.Mounts
	for i, p := range s.Masked {
		m := ms[len(ms)-len(s.Masked)+i]
		if m.Source != "/dev/null" || m.Target != p || !m.ReadOnly {
			t.Errorf("mask %d: %+v", i, m)
		}
	}
	s.Masked = nil
	if s.hash() != plain {
		t.Error("an empty mask list changed the hash")
	}
}

// The scan's listing gives each runtime name's file, or the file its link
// leads to; other names and relative lines are dropped.
func TestParseScan(t *testing.T) {
	t.Parallel()
	got := parseScan("/usr/bin/python3\t/usr/bin/python3.11\n/usr/bin/python3.11\t/usr/bin/python3.11\n/usr/bin/python3-config\t/usr/bin/python3-config\n/opt/n/bin/node\t\nrelative/python3\t\n/usr/lib/libpython3.11.so.1.0\t/usr/lib/libpython3.11.so.1.0\n" + scanDone + "\n")
	want := map[string]string{"/usr/bin/python3.11": "python", "/opt/n/bin/node": "node", "/usr/lib/libpython3.11.so.1.0": "python"}
	if len(got) != len(want) {
		t.Fatalf("parseScan = %v, want %v", got, want)
	}
	for p, rt := range want {
		if got[p] != rt {
			t.Errorf("parseScan[%s] = %q, want %q", p, got[p], rt)
		}
	}
}
