package mcp

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input schemas come from the tools' argument structs (descriptions from
// their jsonschema tags); a few keywords that struct tags cannot carry
// (defaults, ranges) are added by schemaOpts. Ranges that the engine
// checks itself are only described, so that bad input gets the engine's
// own message, naming the field, as over REST.

// schemaOpt adjusts one property of an inferred schema.
type schemaOpt func(*jsonschema.Schema)

// inputSchema infers the schema of T and applies opts.
func inputSchema[T any](opts ...schemaOpt) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p := s.Properties[name]
	if p == nil {
		panic("schema has no property " + name)
	}
	return p
}

// withDefault documents the default of a property. The SDK also fills it
// in when the caller omits the property.
func withDefault(name string, v any) schemaOpt {
	return func(s *jsonschema.Schema) {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		property(s, name).Default = data
	}
}

// withRange bounds a numeric property.
func withRange(name string, lo, hi float64) schemaOpt {
	return func(s *jsonschema.Schema) {
		p := property(s, name)
		p.Minimum, p.Maximum = &lo, &hi
	}
}

// hints are a tool's behaviour hints for clients.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// addTool registers a typed tool with its schema and hints.
func addTool[In, Out any](srv *sdk.Server, name, title, desc string, h hints, schema *jsonschema.Schema, handler sdk.ToolHandlerFor[In, Out]) {
	t := &sdk.Tool{
		Name:        name,
		Title:       title,
		Description: desc,
		Annotations: &sdk.ToolAnnotations{
			Title:           title,
			ReadOnlyHint:    h.readOnly,
			DestructiveHint: &h.destructive,
			IdempotentHint:  h.idempotent,
			OpenWorldHint:   &h.openWorld,
		},
	}
	if schema != nil {
		// An empty id would make a path like /sandboxes//exec, which the
		// API redirects to the dashboard: refuse it here, naming the field.
		if p := schema.Properties["sandboxId"]; p != nil && slices.Contains(schema.Required, "sandboxId") {
			one := 1
			p.MinLength = &one
		}
		t.InputSchema = schema
	}
	sdk.AddTool(srv, t, handler)
}

var (
	readOnly   = hints{readOnly: true, idempotent: true}
	changes    = hints{idempotent: true}
	runsCode   = hints{openWorld: true}
	destroys   = hints{destructive: true, idempotent: true}
	killsProcs = hints{destructive: true}
)
