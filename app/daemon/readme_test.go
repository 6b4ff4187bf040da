package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/doccheck"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestREADMEUsingItRuns runs the README's "Using it" block (the block
// marked run: TestREADMEUsingItRuns) as a shell script against a daemon
// of its own, as docsDaemon describes: an example that no longer works as
// written fails here.
func TestREADMEUsingItRuns(t *testing.T) {
	requireTools(t, "bwrap", "python3", "bash")
	blocks := docBlocks(t, "TestREADMEUsingItRuns")
	if len(blocks) != 1 || blocks[0].File != "README.md" {
		t.Fatalf("want the README's Using it block, one block marked <!-- run: TestREADMEUsingItRuns -->; found %d", len(blocks))
	}
	d := startDocsDaemon(t)
	out, err := d.run(t, blocks)
	if err != nil {
		t.Fatalf("the README's Using it block fails as written: %v\n%s\n--- the daemon's log:\n%s", err, out, d.log.String())
	}
	for _, want := range []string{"42\n", "hello.txt\n", "kept\n", "ISOLATION", "when stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(d.project, "files.txt")); err != nil {
		t.Errorf("run --here did not write into the current folder: %v", err)
	}
	// Its last line stopped the daemon.
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Error("senclaw stop did not stop the daemon")
	}
}

// TestDocsExamplesRun runs the examples of the pages in docs/ (each
// block marked run: TestDocsExamplesRun) where they are: a page's blocks,
// in order, as one shell script against a daemon of the page's own, as
// docsDaemon describes.
func TestDocsExamplesRun(t *testing.T) {
	requireTools(t, "bwrap", "python3", "bash", "script")
	blocks := docBlocks(t, "TestDocsExamplesRun")
	var pages []string
	byPage := map[string][]doccheck.Block{}
	for _, b := range blocks {
		if byPage[b.File] == nil {
			pages = append(pages, b.File)
		}
		byPage[b.File] = append(byPage[b.File], b)
	}
	if len(pages) == 0 {
		t.Fatal("no block of the docs is marked <!-- run: TestDocsExamplesRun -->")
	}
	for _, page := range pages {
		name := strings.TrimSuffix(filepath.Base(page), ".md")
		t.Run(name, func(t *testing.T) {
			d := startDocsDaemon(t)
			out, err := d.run(t, byPage[page])
			if err != nil {
				t.Fatalf("%s's examples fail as written (from %s): %v\n%s\n--- the daemon's log:\n%s", page, byPage[page][0].Where(), err, out, d.log.String())
			}
		})
	}
}

// docBlocks are the blocks of the repository's pages marked run: test.
func docBlocks(t *testing.T, test string) []doccheck.Block {
	t.Helper()
	root, err := doccheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doccheck.RunBy(root, test)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// docsDaemon is a `senclaw serve` (the senclaw of this test binary, with
// the real bwrap) on dirs of its own, for the docs' examples to run
// against as a reader would run them. The script runs in a project folder
// holding a copy of the clone's examples/, with HOME a folder whose data/
// holds one file and whose ~/.local/share/senclaw is the data dir (a
// user's default). Two things are changed before it runs: port 8000
// becomes a free one (the machine is shared), and a line that reaches a
// host on the Internet is left out (tests talk to this machine only).
type docsDaemon struct {
	env     []string
	project string
	log     *testutil.SyncBuffer
	exited  chan struct{}
}

func startDocsDaemon(t *testing.T) *docsDaemon {
	t.Helper()
	root := filepath.Dir(cliEnv(t))
	bin := filepath.Join(root, "bin")
	home := filepath.Join(root, "home")
	data := filepath.Join(home, ".local", "share", "senclaw")
	project := filepath.Join(root, "project")
	for _, dir := range []string{bin, filepath.Join(home, "data"), data, project} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The sandbox user (nobody, under a root engine) writes the project.
	if err := os.Chmod(project, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "data", "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := doccheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(project, "examples"), os.DirFS(filepath.Join(repo, "examples"))); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + asSenclaw + "=1 exec " + strconv.Quote(self) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "senclaw"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &docsDaemon{
		// asSenclaw for every process: what the examples write to run
		// senclaw later (the agent shell's wrapper, an MCP client's
		// config) names this test binary, which acts as senclaw only so.
		env:     append(os.Environ(), asSenclaw+"=1", "HOME="+home, "SENCLAW_DATA_DIR="+data, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")),
		project: project,
		log:     new(testutil.SyncBuffer),
		exited:  make(chan struct{}),
	}
	daemon := exec.Command(filepath.Join(bin, "senclaw"), "serve", "--listen", "127.0.0.1:0")
	daemon.Env = d.env
	daemon.Stdout, daemon.Stderr = d.log, d.log
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = daemon.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
			return // the examples stopped it
		default:
		}
		// A graceful stop ends what the examples left running (a Space
		// App, a background run) with the daemon.
		stop := exec.Command(filepath.Join(bin, "senclaw"), "stop")
		stop.Env = d.env
		_ = stop.Run()
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			_ = daemon.Process.Kill()
			<-d.exited
		}
	})
	sock := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw", "api.sock")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start:\n%s", d.log.String())
		}
	}
}

// run runs blocks, in order, as one bash script (set -eux: the first
// example that fails fails it) in the project folder, and returns what it
// printed.
func (d *docsDaemon) run(t *testing.T, blocks []doccheck.Block) (string, error) {
	t.Helper()
	port := freePort(t)
	var script, skipped []string
	for _, b := range blocks {
		for _, line := range strings.Split(b.Text, "\n") {
			if internet.MatchString(line) {
				skipped = append(skipped, line)
				continue
			}
			script = append(script, strings.ReplaceAll(line, "8000", port))
		}
	}
	if len(skipped) > 1 {
		t.Fatalf("more than one example reaches the Internet, which this test cannot run: %q", skipped)
	}
	sh := exec.Command("bash", "-c", "set -eux\n"+strings.Join(script, "\n"))
	sh.Dir, sh.Env, sh.Stdin = d.project, d.env, nil
	out, err := sh.CombinedOutput()
	return string(out), err
}

// internet matches a line that reaches a host other than this machine.
var internet = regexp.MustCompile(`https?://(?:[a-z0-9-]+\.)+[a-z]{2,}`)

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	return strconv.Itoa(testutil.FreePort(t))
}
