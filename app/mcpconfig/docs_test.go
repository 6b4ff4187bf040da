package mcpconfig

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/senclaw/sandbox/internal/doccheck"
)

// TestDocsConfigIsWhatServersGives: the configuration docs/mcp.md shows
// (its block marked run: TestDocsConfigIsWhatServersGives) is what
// senclaw mcp-config generic prints, for an engine at the default
// address, with the page's placeholders for the path and the client's
// agent token.
func TestDocsConfigIsWhatServersGives(t *testing.T) {
	t.Parallel()
	root, err := doccheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doccheck.RunBy(root, "TestDocsConfigIsWhatServersGives")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("want one block marked <!-- run: TestDocsConfigIsWhatServersGives -->, found %d", len(blocks))
	}
	servers, _, err := Servers("generic", Endpoint{
		Senclaw: "/path/to/senclaw",
		URL:     "http://127.0.0.1:7878",
		Token:   "<the agent token mcp:generic, made for this client>",
	})
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(Document(servers), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(blocks[0].Text), &got); err != nil {
		t.Fatalf("%s: %v", blocks[0].Where(), err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s shows\n%s\nbut senclaw mcp-config generic prints\n%s", blocks[0].Where(), blocks[0].Text, Document(servers))
	}
}
