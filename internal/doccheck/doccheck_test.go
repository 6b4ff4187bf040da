package doccheck

import (
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"Install and start (Debian 12)":           "install-and-start-debian-12",
		"When something breaks: `senclaw doctor`": "when-something-breaks-senclaw-doctor",
		"The agents you use: the agent shell":     "the-agents-you-use-the-agent-shell",
		"What's [linked](x.md) here":              "whats-linked-here",
		"snake_case and-hyphens":                  "snake_case-and-hyphens",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchorsNumberRepeats(t *testing.T) {
	t.Parallel()
	got := Anchors("# Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n<a id=\"kept\"></a>\n")
	want := map[string]bool{"notes": true, "notes-1": true, "kept": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}

func TestBlocksReadTheirMarker(t *testing.T) {
	t.Parallel()
	md := "text\n<!-- run: TestX -->\n```sh\necho a\n```\n\n```json\n{}\n```\n<!-- not run: needs a display -->\n````sh\n```\n````\n"
	got := Blocks("p.md", md)
	want := []Block{
		{File: "p.md", Line: 3, Lang: "sh", Run: "TestX", Text: "echo a\n"},
		{File: "p.md", Line: 7, Lang: "json", Text: "{}\n"},
		{File: "p.md", Line: 11, Lang: "sh", Run: "not run: needs a display", Text: "```\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Blocks =\n%+v\nwant\n%+v", got, want)
	}
	if why, ok := got[2].NotRun(); !ok || why != "needs a display" {
		t.Errorf("NotRun = %q, %v", why, ok)
	}
}

func TestLinksLeaveOutCodeAndSites(t *testing.T) {
	t.Parallel()
	md := "See [a](docs/a.md#x), [b](#here) and [c](https://example.org).\n`[d](not.md)`\n```\n[e](code.md)\n```\n[f]: ../g.md\n"
	got := Links(md)
	want := []Link{
		{Line: 1, Path: "docs/a.md", Anchor: "x"},
		{Line: 1, Anchor: "here"},
		{Line: 6, Path: "../g.md"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Links = %+v, want %+v", got, want)
	}
}
