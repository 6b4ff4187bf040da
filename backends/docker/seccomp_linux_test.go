package docker

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/moby/profiles/seccomp"
)

// TestSeccompDefault_isMobys proves the embedded copy of Docker's default
// profile is the one github.com/moby/profiles/seccomp generates.
func TestSeccompDefault_isMobys(t *testing.T) {
	t.Parallel()
	var embedded seccomp.Seccomp
	if err := json.Unmarshal(defaultProfileJSON, &embedded); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(seccomp.DefaultProfile())
	var wantP seccomp.Seccomp
	if err := json.Unmarshal(want, &wantP); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&embedded, &wantP) {
		t.Fatal("seccomp_default.json differs from moby's DefaultProfile(); copy default.json of the moby/profiles/seccomp version in go.mod")
	}
}
