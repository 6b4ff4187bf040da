package testutil

import (
	"strconv"
	"strings"
	"testing"
)

func TestSecondUserIsARealOtherAccount(t *testing.T) {
	u := SecondUser(t)
	if u.UID == 0 || u.UID == 65534 {
		t.Fatalf("the second user is uid %d", u.UID)
	}
	if got := strings.TrimSpace(u.Run(t, "id", "-u")); got != strconv.Itoa(u.UID) {
		t.Fatalf("id -u as %s = %q, want %d", u.Name, got, u.UID)
	}
	if again := SecondUser(t); again != u {
		t.Fatalf("a second call gave %+v, the first %+v", again, u)
	}
}
