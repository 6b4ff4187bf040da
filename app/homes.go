package app

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The homes of everyone on this machine: a sandbox is given no folder
// from which another person's programs run code (a read-write home, its
// ~/.config/autostart, ~/.local/bin), nor one that holds their secrets,
// and a root engine's open mode masks those secrets in every home.

// loginPlace is a folder of a home from which programs run code without
// being asked: at login (the shell's start files in the home itself and
// the folders they source, the desktop's autostart entries and login
// scripts, the user's systemd units and environment), from PATH
// (~/.local/bin, ~/bin and the language installers' bin folders) or
// when a person uses a tool whose configuration names programs (.ssh's
// config, .gnupg's agent, .kube's and .docker's credential helpers,
// git's fsmonitor and pager, Python's .pth files).
type loginPlace struct {
	rel string
	// whole says that every folder in it counts too; otherwise only the
	// folder itself does (~/.config/nvim is no login place; ~/.config,
	// written whole, would hold ~/.config/autostart).
	whole bool
}

var loginPlaces = []loginPlace{
	{"", false}, // the home itself: .bashrc, .profile, .zshrc, ...
	{".config", false},
	{".config/autostart", true},
	{".config/systemd", true},
	{".config/environment.d", true},
	{".local/bin", true},
	{".local/share/applications", true},
	{"bin", true},
	{".ssh", true},
	{".gnupg", true},
	{".kube", true},
	{".docker", true},
	// Sourced by the shells' start files (Fedora's ~/.bashrc sources
	// ~/.bashrc.d/*; fish runs config.fish and conf.d/*), or by the lines
	// the installers add to them (rustup's ~/.cargo/env, nvm.sh,
	// oh-my-zsh, pyenv's init and shims).
	{".bashrc.d", true},
	{".config/fish", true},
	{".cargo", false},
	{".nvm", true},
	{".oh-my-zsh", true},
	{".pyenv", true},
	// On PATH as the installers set it: rustup's, go install's.
	{".cargo/bin", true},
	{"go/bin", true},
	// KDE sources env/*.sh at login and runs the autostart scripts.
	{".config/plasma-workspace", true},
	{".config/autostart-scripts", true},
	// git runs the programs its config names (core.fsmonitor at every
	// git status); Python runs the .pth files of the user's site-packages
	// (~/.local/lib/pythonX.Y) at every start.
	{".config/git", true},
	{".local/lib", true},
}

// engineHomeDirs are where a SenClaw engine run by a person keeps its
// database and token: another person's are masked and never mounted.
var engineHomeDirs = []string{".local/share/senclaw", ".config/senclaw"}

// homeParents are the folders of a home whose entries the secrets and the
// login places are: a home's table is made again when one of them changes.
var homeParents = []string{"", ".config", ".local", ".local/share", ".cargo", ".var", "go"}

// maxPasswd bounds what is read of the account list.
const maxPasswd = 16 << 20

// home is one account's home directory.
type home struct {
	// user is the account's name; "" for the engine's own (Options.HomeDir).
	user string
	// dir is the home's canonical path (as far as it exists).
	dir string
}

// hostHomes knows the home of every account of the machine (the passwd
// file, and /root) and, per home, its secret folders and login places
// as they are on disk. Both are read again only when they change: the
// passwd file when its size, time or inode does, a home's table when one
// of its homeParents does (making ~/.aws changes the home's time).
type hostHomes struct {
	passwd string
	// own is the engine's own user's home ("" for none).
	own string

	mu     sync.Mutex
	stamp  fileStamp
	homes  []home
	tables map[string]*homeTable
}

// homeTable is what one home holds, canonical: the secret folders that
// exist, and the login places (where a link leads, too).
type homeTable struct {
	// stamps are the home's homeParents' as the table was made.
	stamps  []fileStamp
	secrets []string
	places  []placePath
}

// fresh reports whether the home at dir is as the table was made of it.
func (t *homeTable) fresh(dir string) bool {
	for i, s := range t.stamps {
		if (i == 0 || s.ok) && stampOf(filepath.Join(dir, homeParents[i])) != s {
			return false
		}
	}
	return true
}

// placePath is a login place of a home, canonical.
type placePath struct {
	path  string
	whole bool
	home  home
}

// fileStamp tells a file's versions apart: which file it is, its size
// and time (a directory's time changes with its entries).
type fileStamp struct {
	ok       bool
	ino, dev uint64
	size     int64
	mtime    time.Time
}

// stampOf is the stamp of what path leads to ({} when nothing is there).
func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime()}
	s.ino, s.dev = identityOf(fi)
	return s
}

func newHostHomes(passwd, own string) *hostHomes {
	if passwd == "" {
		passwd = "/etc/passwd"
	}
	return &hostHomes{passwd: passwd, own: own, tables: map[string]*homeTable{}}
}

// allLocked returns every home: the engine's own, /root and the passwd
// file's, canonical, each once. A passwd file that cannot be read leaves
// the first two.
func (h *hostHomes) allLocked() []home {
	s := stampOf(h.passwd)
	if h.homes != nil && s == h.stamp {
		return h.homes
	}
	h.stamp = s
	var out []home
	if h.own != "" {
		out = append(out, home{dir: canonical(h.own)})
	}
	out = append(out, home{user: "root", dir: canonical("/root")})
	if f, err := os.Open(h.passwd); err == nil {
		out = append(out, parsePasswd(io.LimitReader(f, maxPasswd))...)
		f.Close()
	}
	seen := map[string]bool{}
	h.homes = slices.DeleteFunc(out, func(x home) bool {
		if seen[x.dir] {
			return true
		}
		seen[x.dir] = true
		return false
	})
	return h.homes
}

// parsePasswd reads the homes of a passwd file (name:pw:uid:gid:gecos:
// home:shell); lines that are not such an entry, or name a relative
// home, are skipped.
func parsePasswd(r io.Reader) []home {
	var out []home
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 7 || !filepath.IsAbs(f[5]) {
			continue
		}
		out = append(out, home{user: f[0], dir: canonical(f[5])})
	}
	return out
}

// tableOf returns the table of hm, made again when the home changed:
// when the home, or one of its homeParents that existed, did (one that
// did not exist cannot appear without changing its parent).
func (h *hostHomes) tableOf(hm home) *homeTable {
	if t := h.tables[hm.dir]; t != nil && t.fresh(hm.dir) {
		return t
	}
	stamps := make([]fileStamp, len(homeParents))
	for i, p := range homeParents {
		stamps[i] = stampOf(filepath.Join(hm.dir, p))
		if i == 0 && !stamps[0].ok {
			stamps = stamps[:1] // no home: nothing below it to look at
			break
		}
	}
	t := &homeTable{stamps: stamps}
	for _, p := range loginPlaces {
		lexical := filepath.Join(hm.dir, p.rel)
		t.places = append(t.places, placePath{path: lexical, whole: p.whole, home: hm})
		if stamps[0].ok {
			if real := canonicalUnder(hm.dir, p.rel); real != lexical {
				t.places = append(t.places, placePath{path: real, whole: p.whole, home: hm})
			}
		}
	}
	if stamps[0].ok {
		for _, s := range slices.Concat(homeSecrets, engineHomeDirs) {
			p := filepath.Join(hm.dir, s)
			if _, err := os.Lstat(p); err != nil {
				continue // only what exists is masked or held
			}
			t.secrets = append(t.secrets, canonicalUnder(hm.dir, s))
		}
	}
	h.tables[hm.dir] = t
	return t
}

// homesView is what every home holds, read once for one judgement.
type homesView struct {
	// secrets are the existing secret folders (and files) of every home
	// and the SenClaw engines' dirs in them; places the login places.
	secrets []string
	places  []placePath
}

// view returns what every home holds now, canonical.
func (h *hostHomes) view() homesView {
	var v homesView
	if h == nil {
		return v
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hm := range h.allLocked() {
		t := h.tableOf(hm)
		v.secrets = append(v.secrets, t.secrets...)
		v.places = append(v.places, t.places...)
	}
	return v
}

// secrets returns the existing secret folders (and files) of every home
// and the SenClaw engines' dirs in them, canonical.
func (h *hostHomes) secrets() []string { return h.view().secrets }

// places returns the login places of every home, canonical.
func (h *hostHomes) places() []placePath { return h.view().places }
