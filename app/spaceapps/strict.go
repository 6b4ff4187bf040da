package spaceapps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/senclaw/sandbox/app"
)

// decodeStrict decodes JSON data into v (a pointer to a struct), refusing
// unknown fields and wrong types with a *app.FieldError that names the
// field by its full path (runtime.port, sandbox.folders[1].path). The
// standard decoder's DisallowUnknownFields names neither the path nor the
// fields that exist. root names the document in messages.
func decodeStrict(data []byte, v any, root string) error {
	d := strictDecoder{root: root}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &app.FieldError{Field: root, Reason: "is empty; it must be a JSON object"}
	}
	return d.decode(data, reflect.ValueOf(v).Elem(), "")
}

type strictDecoder struct{ root string }

func (d strictDecoder) decode(data []byte, v reflect.Value, path string) error {
	if v.Kind() == reflect.Pointer {
		if string(data) == "null" {
			return nil
		}
		v.Set(reflect.New(v.Type().Elem()))
		return d.decode(data, v.Elem(), path)
	}
	switch v.Kind() {
	case reflect.Struct:
		if string(data) == "null" {
			return nil
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return typeError(d.name(path), "an object", data)
		}
		fields := jsonFields(v.Type())
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			i, ok := fields[k]
			if !ok {
				return &app.FieldError{Field: join(path, k), Reason: "is not a field of " + d.name(path) + "; the fields are " + strings.Join(fieldNames(fields), ", ")}
			}
			if err := d.decode(raw[k], v.Field(i), join(path, k)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			break
		}
		if string(data) == "null" {
			return nil
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return typeError(d.name(path), "a list", data)
		}
		out := reflect.MakeSlice(v.Type(), len(raw), len(raw))
		for i, r := range raw {
			if err := d.decode(r, out.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(out)
		return nil
	}
	if err := json.Unmarshal(data, v.Addr().Interface()); err != nil {
		return typeError(d.name(path), kindName(v.Type()), data)
	}
	return nil
}

func typeError(path, want string, got []byte) error {
	g := string(got)
	if len(g) > 40 {
		g = g[:40] + "…"
	}
	return &app.FieldError{Field: path, Value: g, Reason: "must be " + want}
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(kindName(t.Elem()), "a ") + "s"
	case reflect.Map:
		return "an object of strings"
	}
	return t.String()
}

// jsonFields maps t's JSON field names to their indexes.
func jsonFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = i
	}
	return out
}

func fieldNames(m map[string]int) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// name is path, or the document's name at its root.
func (d strictDecoder) name(path string) string {
	if path == "" {
		return d.root
	}
	return path
}
