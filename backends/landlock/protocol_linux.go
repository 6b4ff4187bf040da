package landlock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// protocolRevision is raised when what the helper does with a setup
// changes while the setup's shape stays the same.
const protocolRevision = 1

// Protocol names the setup the helper reads: its revision and the shape
// of every field (names, JSON names, types, nested). A helper executable
// of another build (a stale senclaw-landlock beside a new engine) has
// another Protocol and is not used: it could read a setup with a field
// it does not know, and leave that rule out.
func Protocol() string { return protocol() }

var protocol = sync.OnceValue(func() string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %d\n", protocolRevision)
	shape(&b, reflect.TypeOf(setup{}), map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:12])
})

// shape writes t's shape: a struct's fields in order, with their tags.
func shape(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		fmt.Fprintf(b, "%s of ", t.Kind())
		shape(b, t.Elem(), seen)
	case reflect.Map:
		b.WriteString("map of ")
		shape(b, t.Key(), seen)
		b.WriteString(" to ")
		shape(b, t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			fmt.Fprintf(b, "%s again", t)
			return
		}
		seen[t] = true
		fmt.Fprintf(b, "%s{", t)
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(b, "%s %q ", f.Name, f.Tag)
			shape(b, f.Type, seen)
			b.WriteString("; ")
		}
		b.WriteString("}")
	default:
		fmt.Fprintf(b, "%s(%s)", t, t.Kind())
	}
}
