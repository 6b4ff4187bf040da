package imageref

import (
	"strings"
	"testing"
)

// The cases agree with github.com/distribution/reference's
// ParseNormalizedNamed (v0.6.0), which the engine used before.
func TestCheck(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("a1", 32)
	cases := []struct {
		ref  string
		want string // "" when valid, else a part of the error
	}{
		{"debian", ""},
		{"debian:bookworm-slim", ""},
		{"senclaw-test/busybox:latest", ""},
		{"library/python:3.12", ""},
		{"registry.example.com/team/tool:v1.2", ""},
		{"localhost/tool", ""},
		{"localhost:5000/tool:x", ""},
		{"Registry.Example.com/tool", ""},
		{"[::1]:5000/tool", ""},
		{"a__b/c-d/e.f_g", ""},
		{"a---b", ""},
		{"debian@sha256:" + sha, ""},
		{"debian:12@sha256:" + sha, ""},
		{"debian@sha512:" + sha + sha, ""},
		{"_:latest" + strings.Repeat("x", 0), "invalid"},
		{"", "empty"},
		{"Debian:Latest", "lower case"},
		{"team/Tool", "lower case"},
		{sha, "image id"},
		{"debian:", "invalid"},
		{"debian:-tag", "invalid"},
		{"debian:" + strings.Repeat("t", 129), "invalid"},
		{"a..b", "invalid"},
		{"a___b", "invalid"},
		{"-debian", "invalid"},
		{"debian/", "invalid"},
		{"debian bookworm", "invalid"},
		{"debian@sha256:abc", "invalid"},
		{"debian@sha256:" + strings.Repeat("a", 63), "64 lower-case"},
		{"debian@sha256:" + strings.ToUpper(sha), "64 lower-case"},
		{"debian@md5:" + sha, "not one of"},
		{"host:port/x", "invalid"},
		{strings.Repeat("a", 250), "longer than"},
		{strings.Repeat("a", 247), ""},
		{strings.Repeat("a", 248), "longer than"},
		{"registry.example.com/" + strings.Repeat("a", 255), ""},
		{"registry.example.com/" + strings.Repeat("a", 256), "longer than"},
	}
	for _, tc := range cases {
		err := Check(tc.ref)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%.60q) = %v, want %q", tc.ref, err, tc.want)
		}
	}
}
