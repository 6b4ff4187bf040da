package idmap

import (
	"strings"
	"testing"
)

// TestAttachNeedsAMountNamespaceOfItsOwn: a launcher that shares its
// parent's mount namespace attaches nothing, where every process of the
// sandbox user would see it.
func TestAttachNeedsAMountNamespaceOfItsOwn(t *testing.T) {
	t.Parallel()
	err := attach(request{dir: t.TempDir(), mounts: []Attach{{FD: 1000, Point: 0}}})
	if err == nil || !strings.Contains(err.Error(), "not in a mount namespace of its own") {
		t.Fatalf("attach: %v", err)
	}
}
