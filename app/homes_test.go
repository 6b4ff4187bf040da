package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// loginFolders are the folders of a home that no sandbox may write, as
// the guard's table names them, and what the refusal says.
var loginFolders = []struct{ rel, says string }{
	// A home holds secret folders too, and /root is a system root.
	{"", "home directory|holds|system directory"},
	{".config", "at login or from PATH|holds"}, // it may hold a browser profile
	{".config/autostart", "at login or from PATH"},
	{".config/systemd/user", "at login or from PATH"},
	{".config/environment.d", "at login or from PATH"},
	{".local/bin", "at login or from PATH"},
	{".local/share/applications", "at login or from PATH"},
	{"bin", "at login or from PATH"},
	{".ssh", "secret folder"},
	{".gnupg", "secret folder"},
	{".kube", "secret folder"},
	{".docker", "secret folder"},
	{".bashrc.d", "at login or from PATH"},
	{".config/fish/conf.d", "at login or from PATH"},
	{".cargo", "at login or from PATH"},
	{".cargo/bin", "at login or from PATH"},
	{"go/bin", "at login or from PATH"},
	{".nvm", "at login or from PATH"},
	{".oh-my-zsh/custom", "at login or from PATH"},
	{".pyenv/shims", "at login or from PATH"},
	{".config/plasma-workspace/env", "at login or from PATH"},
	{".config/autostart-scripts", "at login or from PATH"},
	{".config/git", "at login or from PATH"},
	{".local/lib/python3.11/site-packages", "at login or from PATH"},
	{"go", "holds"},
	// Ancestors of the places: writing them whole would make the places.
	{".local", "holds"},
	{".local/share", "holds"},
}

// makeLoginFolders makes the folders of loginFolders in u's home as u,
// and a folder of its own (work) and ~/.config/nvim, which it may give;
// what it made goes when the test ends.
func makeLoginFolders(t *testing.T, u testutil.OtherUser) {
	t.Helper()
	rels := append([]string{"work", ".config/nvim", ".cargo/registry"}, loginRels()...)
	removeLater(t, u.Home, rels)
	args := []string{"-p"}
	for _, rel := range rels {
		args = append(args, filepath.Join(u.Home, rel))
	}
	u.Run(t, "mkdir", args...)
	u.Run(t, "chmod", "0777", filepath.Join(u.Home, "work"), filepath.Join(u.Home, ".config/nvim"), filepath.Join(u.Home, ".cargo/registry"))
}

// makeRootLoginFolders makes those of /root that are missing, and removes
// what it made when the test ends.
func makeRootLoginFolders(t *testing.T) {
	t.Helper()
	removeLater(t, "/root", loginRels())
	for _, rel := range loginRels() {
		must(t, os.MkdirAll(filepath.Join("/root", rel), 0o700))
	}
}

func loginRels() []string {
	var out []string
	for _, f := range loginFolders {
		if f.rel != "" {
			out = append(out, f.rel)
		}
	}
	return out
}

// removeLater removes, when the test ends, the folders of home/rels
// that do not exist now, innermost first, each only if empty: another
// test may have put something of its own in one meanwhile.
func removeLater(t *testing.T, home string, rels []string) {
	var made []string
	for _, rel := range rels {
		p := home
		for _, part := range strings.Split(rel, "/") {
			p = filepath.Join(p, part)
			if _, err := os.Lstat(p); err != nil && !slices.Contains(made, p) {
				made = append(made, p)
			}
		}
	}
	slices.SortFunc(made, func(a, b string) int { return len(b) - len(a) })
	t.Cleanup(func() {
		for _, p := range made {
			os.Remove(p)
		}
	})
}

// guardCase is one folder given to a sandbox and what the guard answers.
type guardCase struct {
	name, source string
	readOnly     bool
	refused      string // what the reason says (one of |-separated); "" when accepted
}

// checkGuard gives tc's folder to e's sandboxes every way there is:
// create, update, sbx_mount / POST mounts, and (read-write) as an agent's
// project dir.
func checkGuard(t *testing.T, e *Engine, backend string, tc guardCase) {
	t.Helper()
	m := backends.Mount{Source: tc.source, Target: "m", ReadOnly: tc.readOnly}
	check := func(how string, err error, field string) {
		t.Helper()
		if tc.refused == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tc.name, how, err)
			}
			return
		}
		var fe *FieldError
		says := slices.ContainsFunc(strings.Split(tc.refused, "|"), func(r string) bool { return strings.Contains(fmt.Sprint(err), r) })
		if !errors.As(err, &fe) || fe.Field != field || !says || !strings.Contains(fmt.Sprint(err), `"`+tc.source+`"`) {
			t.Errorf("%s %s: %v, want a refusal of %s naming %q and saying %q", tc.name, how, err, field, tc.source, tc.refused)
		}
	}
	_, err := e.Create(context.Background(), SandboxConfig{Backend: ptr(backend), Mounts: []backends.Mount{m}})
	check("create", err, "mounts[0].source")
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr(backend)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Update(sb.ID, SandboxConfig{Mounts: []backends.Mount{m}})
	check("update", err, "mounts[0].source")
	m.Target = "other"
	_, err = e.AddMount(sb.ID, m)
	check("mount", err, "source")
	if !tc.readOnly && tc.refused != "" {
		_, err = e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: tc.source, Command: "true"})
		check("project dir", err, "projectDir")
	}
}

// passwdWith writes a passwd file: this machine's, then lines.
func passwdWith(t *testing.T, lines ...string) string {
	t.Helper()
	base, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, append(base, []byte(strings.Join(lines, "\n")+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The mount guard protects every home on this machine, not only the
// engine user's: no sandbox may write another person's home itself (its
// shell start files), the places from which programs run code at login
// or from PATH, their secret folders, nor a folder that holds one of
// those (the passwd file's homes and /root, through links too).
func TestTheMountGuardProtectsEveryHome(t *testing.T) {
	other, third := testutil.SecondUser(t), testutil.LocalUser(t, "senclaw-third")
	makeLoginFolders(t, other)
	makeLoginFolders(t, third)
	makeRootLoginFolders(t)
	// People of the passwd file the test writes: alice's home lies in a
	// folder of its own (people), bob's .config leads to his dotfiles,
	// carol's home is a link to where it really is.
	root := testDir(t)
	people := filepath.Join(root, "people")
	alice, bob := filepath.Join(people, "alice"), filepath.Join(root, "bob")
	carolLink, carolReal := filepath.Join(root, "carol"), filepath.Join(root, "carol-real")
	for _, d := range []string{alice, filepath.Join(bob, "dotfiles/config/autostart"), filepath.Join(bob, "dotfiles/notes"), carolReal} {
		must(t, os.MkdirAll(d, 0o777))
	}
	must(t, os.Symlink("dotfiles/config", filepath.Join(bob, ".config")))
	must(t, os.Symlink(carolReal, carolLink))
	linkToConfig := filepath.Join(root, "cfg")
	must(t, os.Symlink(filepath.Join(other.Home, ".config"), linkToConfig))
	for _, d := range []string{people, filepath.Join(bob, "dotfiles/notes")} {
		must(t, os.Chmod(d, 0o777))
	}
	passwd := passwdWith(t, "alice:x:5001:5001::"+alice+":/bin/sh", "bob:x:5002:5002::"+bob+":/bin/sh", "carol:x:5003:5003::"+carolLink+":/bin/sh")
	e := directEngine(t, func(o *Options) { o.PasswdFile = passwd })

	var cases []guardCase
	for _, h := range []string{other.Home, third.Home, "/root"} {
		for _, f := range loginFolders {
			p := filepath.Join(h, f.rel)
			cases = append(cases, guardCase{name: p + "_rw", source: p, refused: f.says})
		}
		if h != "/root" { // the sandbox user may not reach into /root at all
			cases = append(cases,
				guardCase{name: h + "/work_rw", source: filepath.Join(h, "work")},
				guardCase{name: h + "/.config/nvim_rw", source: filepath.Join(h, ".config/nvim")},
				guardCase{name: h + "/.config/nvim_ro", source: filepath.Join(h, ".config/nvim"), readOnly: true},
				guardCase{name: h + "/.cargo/registry_rw", source: filepath.Join(h, ".cargo/registry")})
		}
	}
	cases = append(cases,
		guardCase{name: "holds_a_home", source: people, refused: "holds"},
		guardCase{name: "home_of_the_file", source: alice, refused: "home directory"},
		guardCase{name: "all_homes", source: "/home", refused: "system directory"},
		guardCase{name: "whole_disk", source: "/", refused: "system directory"},
		guardCase{name: "link_to_config", source: linkToConfig, refused: "at login or from PATH|holds"},
		guardCase{name: "config_leads_to_dotfiles", source: filepath.Join(bob, "dotfiles/config"), refused: "at login or from PATH"},
		guardCase{name: "autostart_through_the_link", source: filepath.Join(bob, "dotfiles/config/autostart"), refused: "at login or from PATH"},
		guardCase{name: "holds_the_linked_config", source: filepath.Join(bob, "dotfiles"), refused: "holds"},
		guardCase{name: "beside_the_linked_config", source: filepath.Join(bob, "dotfiles/notes")},
		guardCase{name: "home_behind_a_link", source: carolReal, refused: "home directory"},
	)
	for _, tc := range cases {
		if tc.refused == "" && !tc.readOnly {
			must(t, os.Chmod(tc.source, 0o777))
		}
		checkGuard(t, e, "direct", tc)
	}
}

// mountAllow widens the login places of another home as it widens the
// system trees, and the create note says so; their secret folders stay
// refused whatever it says.
func TestMountAllowWidensAnotherHomesLoginPlaces(t *testing.T) {
	third := testutil.LocalUser(t, "senclaw-third")
	makeLoginFolders(t, third)
	e, backend := bwrapEngine(t), "bwrap" // an idmapped mount writes third's folder
	bin := filepath.Join(third.Home, ".local/bin")
	m := backends.Mount{Source: bin, Target: "bin"}
	if _, err := e.Create(context.Background(), SandboxConfig{Backend: ptr(backend), Mounts: []backends.Mount{m}}); err == nil || !strings.Contains(err.Error(), "at login or from PATH") {
		t.Fatalf("a read-write ~/.local/bin of another user without mountAllow: %v", err)
	}
	s := e.Settings()
	s.MountAllow = []string{bin}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr(backend), Mounts: []backends.Mount{m}})
	if err != nil {
		t.Fatal(err)
	}
	if note := e.CreateNotes(context.Background(), sb).Text(); !strings.Contains(note, "mountAllow") || !strings.Contains(note, bin) || !strings.Contains(note, "login") {
		t.Errorf("create note %q does not say that mountAllow let %s in", note, bin)
	}
	for _, secret := range []string{".ssh", ".gnupg", ".kube", ".docker"} {
		s.MountAllow = []string{filepath.Join(third.Home, secret)}
		if _, err := e.SetSettings(s); err == nil || !strings.Contains(err.Error(), "mountAllow[0]") || !strings.Contains(err.Error(), "secret folder") {
			t.Errorf("mountAllow %s: %v", s.MountAllow[0], err)
		}
	}
}

// The table of homes is read again when the passwd file changes, and a
// home's when one of its folders does: a secret folder made, a link put
// where ~/.config was, a new account.
func TestHomesAreReadAgainWhenTheyChange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dave, erin := filepath.Join(root, "dave"), filepath.Join(root, "erin")
	must(t, os.MkdirAll(filepath.Join(dave, "dotfiles/config"), 0o755))
	passwd := filepath.Join(root, "passwd")
	must(t, os.WriteFile(passwd, []byte("dave:x:5010:5010::"+dave+":/bin/sh\n"), 0o644))
	h := newHostHomes(passwd, "")
	has := func(list []string, p string) bool { return slices.Contains(list, p) }
	placed := func(p string) bool {
		return slices.ContainsFunc(h.places(), func(x placePath) bool { return x.path == p })
	}
	if has(h.secrets(), filepath.Join(dave, ".aws")) || !placed(filepath.Join(dave, ".config")) {
		t.Fatalf("first look: %v", h.secrets())
	}
	must(t, os.Mkdir(filepath.Join(dave, ".aws"), 0o700))
	must(t, os.MkdirAll(filepath.Join(dave, "dotfiles/config/gcloud"), 0o700))
	must(t, os.Symlink("dotfiles/config", filepath.Join(dave, ".config")))
	if s := h.secrets(); !has(s, filepath.Join(dave, ".aws")) || !has(s, filepath.Join(dave, "dotfiles/config/gcloud")) {
		t.Errorf("after making ~/.aws and linking ~/.config: %v", s)
	}
	if !placed(filepath.Join(dave, "dotfiles/config")) || !placed(filepath.Join(dave, "dotfiles/config/autostart")) {
		t.Error("the linked ~/.config is not a login place")
	}
	must(t, os.MkdirAll(filepath.Join(erin, ".ssh"), 0o700))
	must(t, os.WriteFile(passwd, []byte("dave:x:5010:5010::"+dave+":/bin/sh\nerin:x:5011:5011::"+erin+":/bin/sh\n"), 0o644))
	if !has(h.secrets(), filepath.Join(erin, ".ssh")) || !placed(erin) {
		t.Error("a new account's home is not known")
	}
}
