package netfwd

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestArgvRoundTrip(t *testing.T) {
	for _, argv := range [][]string{
		{"true"},
		{"/bin/sh", "-c", "echo 'a b'; exit 3"},
		{"printf", "", "x\ny", "--", "é"},
	} {
		b, err := EncodeArgv(argv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadArgv(io.NopCloser(bytes.NewReader(b)))
		if err != nil || !slices.Equal(got, argv) {
			t.Errorf("%q came back as %q (%v)", argv, got, err)
		}
	}
}

func TestArgvRefusals(t *testing.T) {
	for _, argv := range [][]string{nil, {""}, {"echo", "a\x00--evil"}, {"echo", strings.Repeat("x", MaxArgv)}} {
		if _, err := EncodeArgv(argv); err == nil {
			t.Errorf("%.40q was encoded", argv)
		}
	}
	for _, in := range []string{"", "\x00", "true", "\x00true\x00", strings.Repeat("x", MaxArgv+1) + "\x00"} {
		if argv, err := ReadArgv(io.NopCloser(strings.NewReader(in))); err == nil {
			t.Errorf("%.40q was read as %q", in, argv)
		}
	}
}

func TestParseArgvFD(t *testing.T) {
	if _, err := parse([]string{"--argv-fd", "5", "--", "true"}); err == nil {
		t.Error("--argv-fd with a command after -- was taken")
	}
	if _, err := parse([]string{"--argv-fd", "2", "--"}); err == nil {
		t.Error("--argv-fd 2 was taken")
	}
	c, err := parse([]string{"--argv-fd", "5", "--"})
	if err != nil || c.argvFD != 5 {
		t.Errorf("--argv-fd 5: %+v %v", c, err)
	}
	if got := ArgvWith(nil, Handles{Argv: 7}, nil); !slices.Equal(got, []string{BinaryPath, "--argv-fd", "7", "--"}) {
		t.Errorf("ArgvWith: %q", got)
	}
}

// A command cut short (the engine died while it wrote it) is refused
// whole: no prefix of one, not even one that ends where an argument
// does, reads as a shorter command.
func TestArgvCutShortIsRefused(t *testing.T) {
	argv := []string{"rm", "-rf", "--", "build", "--no-preserve-root-is-not-here"}
	b, err := EncodeArgv(argv)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(b); n++ {
		if got, err := ReadArgv(io.NopCloser(bytes.NewReader(b[:n]))); err == nil {
			t.Errorf("the first %d of %d bytes were read as %q", n, len(b), got)
		}
	}
}
