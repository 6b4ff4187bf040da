package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/senclaw/sandbox/backends/reexec"
)

// The response-schema check: every answer the tests of this package get
// through do (every route, success and error, from a real server) is
// validated against openapi.json with kin-openapi, with every object of
// the document closed (additionalProperties false where it lists its
// properties), so an answer fails when it carries a field the document
// does not list, misses a required one, or has a status or content type
// the operation does not document. NDJSON streams are checked line by
// line against the media type's x-ndjson-line schema. TestMain fails the
// package when a documented operation never got a checked success.

// strictSpec is openapi.json loaded with its objects closed, and a mux
// that finds the documented path of a request.
type strictSpec struct {
	doc *openapi3.T
	mux *http.ServeMux
}

var loadStrict = sync.OnceValues(func() (*strictSpec, error) {
	var raw map[string]any
	if err := json.Unmarshal(openAPI, &raw); err != nil {
		return nil, err
	}
	closeObjects(raw)
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("loading openapi.json: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.json (closed) is not valid: %w", err)
	}
	// The dashboard's pages are text, like a string schema.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	mux := http.NewServeMux()
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			mux.HandleFunc(method+" "+path, func(http.ResponseWriter, *http.Request) {})
		}
	}
	return &strictSpec{doc: doc, mux: mux}, nil
})

// closeObjects adds additionalProperties: false to every object schema
// that lists its properties and says nothing of others.
func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "object" && v["properties"] != nil && v["additionalProperties"] == nil {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			closeObjects(c)
		}
	case []any:
		for _, c := range v {
			closeObjects(c)
		}
	}
}

// checked records the statuses each operation was checked with.
var checked = struct {
	sync.Mutex
	ops map[string]map[int]bool
}{ops: map[string]map[int]bool{}}

// checkResponse validates one answer (status, header, body) to req
// against the document.
func checkResponse(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if status == http.StatusSwitchingProtocols {
		return
	}
	spec, err := loadStrict()
	if err != nil {
		t.Fatal(err)
	}
	_, pattern := spec.mux.Handler(req)
	if pattern == "" {
		t.Errorf("%s %s: the answer %d is to a route openapi.json does not have", req.Method, req.URL.Path, status)
		return
	}
	method, path, _ := strings.Cut(pattern, " ")
	item := spec.doc.Paths.Value(path)
	op := item.GetOperation(method)
	checked.Lock()
	if checked.ops[pattern] == nil {
		checked.ops[pattern] = map[int]bool{}
	}
	checked.ops[pattern][status] = true
	checked.Unlock()
	ctype, _, _ := strings.Cut(header.Get("Content-Type"), ";")
	if ctype == "application/x-ndjson" {
		checkStream(t, spec, pattern, op, status, body)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route:   &routers.Route{Spec: spec.doc, Path: path, PathItem: item, Method: method, Operation: op},
		},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: the answer %d %s does not match openapi.json:\n%v", req.Method, req.URL.RequestURI(), status, short(body), err)
	}
}

// checkStream validates each line of an NDJSON answer against its media
// type's x-ndjson-line schema.
func checkStream(t *testing.T, spec *strictSpec, pattern string, op *openapi3.Operation, status int, body []byte) {
	t.Helper()
	resp := op.Responses.Status(status)
	var line *openapi3.Schema
	if resp != nil && resp.Value != nil {
		if mt := resp.Value.Content.Get("application/x-ndjson"); mt != nil {
			if ref, ok := mt.Extensions["x-ndjson-line"].(map[string]any); ok {
				name := strings.TrimPrefix(fmt.Sprint(ref["$ref"]), "#/components/schemas/")
				if s := spec.doc.Components.Schemas[name]; s != nil {
					line = s.Value
				}
			}
		}
	}
	if line == nil {
		t.Errorf("%s: an NDJSON answer %d, which openapi.json does not describe (no x-ndjson-line)", pattern, status)
		return
	}
	for _, l := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var v any
		if err := json.Unmarshal(l, &v); err != nil {
			t.Errorf("%s: a stream line is not JSON: %s", pattern, short(l))
			continue
		}
		if err := line.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: the stream line %s does not match openapi.json: %v", pattern, short(l), err)
		}
	}
}

func short(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// checkedBody reads resp's body and checks the answer.
func checkedBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	data, _ := io.ReadAll(resp.Body)
	checkResponse(t, resp.Request, resp.StatusCode, resp.Header, data)
	return data
}

// unchecked are the operations no test of this package can answer with
// a success: the attach upgrade's 101 is read by app/attach's client
// (attach_test.go), MCP by app/mcp's tests against a daemon, and the
// login redirect by TestLoginGivesTheDashboardASession's own client.
var unchecked = map[string]bool{"POST /mcp": true, "GET /mcp": true, "DELETE /mcp": true}

func TestMain(m *testing.M) {
	reexec.Init()
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		if missing := neverSucceeded(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: these documented operations never got a success that was checked against openapi.json:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// neverSucceeded lists the documented operations that no checked answer
// was a 2xx (or 3xx) of.
func neverSucceeded() []string {
	spec, err := loadStrict()
	if err != nil {
		return []string{err.Error()}
	}
	checked.Lock()
	defer checked.Unlock()
	var out []string
	for path, item := range spec.doc.Paths.Map() {
		for method := range item.Operations() {
			key := method + " " + path
			if unchecked[key] || slices.ContainsFunc(keys(checked.ops[key]), func(s int) bool { return s >= 200 && s < 400 }) {
				continue
			}
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOpenAPIIsGenerated: openapi.json is what scripts/gen-openapi.py
// writes (edit the generator's tables, then run it).
func TestOpenAPIIsGenerated(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is missing")
	}
	out := filepath.Join(t.TempDir(), "openapi.json")
	if msg, err := exec.Command(python, "../../scripts/gen-openapi.py", out).CombinedOutput(); err != nil {
		t.Fatalf("gen-openapi.py: %v\n%s", err, msg)
	}
	if data, _ := os.ReadFile(out); !bytes.Equal(data, openAPI) {
		t.Fatal("app/api/openapi.json is not what scripts/gen-openapi.py writes: run python3 scripts/gen-openapi.py")
	}
}

// TestOpenAPIDocumentIsValid: openapi.json is a valid OpenAPI 3.1
// document (kin-openapi's validator), and what a reader needs is there:
// a unique operationId, a summary and the error answers on every
// operation, servers and a license.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableSchemaPatternValidation()); err != nil {
		t.Fatalf("openapi.json is not valid: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || len(doc.Servers) == 0 || doc.Info.License == nil || doc.Info.License.Name == "" {
		t.Errorf("openapi %s, servers %v, license %v", doc.OpenAPI, doc.Servers, doc.Info.License)
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			if op.OperationID == "" || op.Summary == "" {
				t.Errorf("%s has no operationId or summary", key)
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share the operationId %s", key, other, op.OperationID)
			}
			ids[op.OperationID] = key
			if strings.HasPrefix(path, "/api/") && path != "/api/sandbox/openapi.json" {
				for _, code := range []int{401, 403, 500, 503} {
					if op.Responses.Status(code) == nil {
						t.Errorf("%s does not document %d", key, code)
					}
				}
			}
		}
	}
}
