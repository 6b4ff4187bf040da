package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

type filesArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Path      string `json:"path,omitempty" jsonschema:"folder to list, relative to the sandbox's folder; empty lists the top"`
}

type filesResult struct {
	Entries []app.FileEntry `json:"entries" jsonschema:"name, path (relative, usable with sbx_file_read), dir, size in bytes, modifiedMs (Unix milliseconds), link target, readOnly inside a read-only mount"`
}

type fileReadArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Path      string `json:"path" jsonschema:"file to read, relative to the sandbox's folder (mounts included); at most 2 MiB"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf-8 (default) returns text when the file is valid UTF-8 and base64 otherwise; base64 always returns base64"`
}

type fileWriteArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Path      string `json:"path" jsonschema:"file to write, relative to the sandbox's folder; missing parent folders are created; an existing file is replaced. Writes into read-only mounts are refused"`
	Content   string `json:"content" jsonschema:"the file's content: text, or base64 when encoding is base64; at most 32 MiB"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf-8 (default) or base64 (for binary content)"`
}

type fileWriteResult struct {
	OK    bool   `json:"ok"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes" jsonschema:"bytes written"`
}

type mountArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Source    string `json:"source" jsonschema:"absolute path of a folder on this machine; system and secret folders are refused"`
	Target    string `json:"target,omitempty" jsonschema:"where it appears, relative to the sandbox's folder; default: the folder's name"`
	ReadOnly  bool   `json:"readOnly,omitempty" jsonschema:"the sandbox may read but not change it"`
	Copy      bool   `json:"copy,omitempty" jsonschema:"for a sandbox on a remote engine: copy the folder in once, since a folder of this machine cannot be bound on another machine"`
}

type mountResult struct {
	OK       bool   `json:"ok"`
	Mounted  string `json:"mounted" jsonschema:"the host folder"`
	At       string `json:"at" jsonschema:"where it appears inside the sandbox"`
	ReadOnly bool   `json:"readOnly"`
	notes
}

type unmountArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Target    string `json:"target" jsonschema:"the mount's target, as sbx_mount answered it (at) or sbx_list shows it"`
}

func (s *server) addFileTools(srv *sdk.Server) {
	addTool(srv, "sbx_files", "List a sandbox's files",
		"List a folder of a persistent sandbox (its own folder and its mounts): names, sizes, modification times. Use it to see what runs produced.",
		readOnly, inputSchema[filesArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in filesArgs) (*sdk.CallToolResult, filesResult, error) {
			entries, err := call(ctx, s, func(c *client.Client) ([]app.FileEntry, error) { return c.Files(ctx, in.SandboxID, in.Path) })
			if entries == nil {
				entries = []app.FileEntry{}
			}
			return nil, filesResult{Entries: entries}, err
		})

	addTool(srv, "sbx_file_read", "Read a file of a sandbox",
		"Read a file of a persistent sandbox, up to 2 MiB: text comes back as UTF-8, anything else as base64, and the answer's encoding says which. "+
			"The text content of the answer is the file itself when it is text.",
		readOnly, inputSchema[fileReadArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in fileReadArgs) (*sdk.CallToolResult, *app.FileContent, error) {
			var asBase64 bool
			switch in.Encoding {
			case "", "utf-8", "utf8":
			case "base64":
				asBase64 = true
			default:
				return nil, nil, fmt.Errorf("encoding %q: use utf-8 or base64", in.Encoding)
			}
			fc, err := call(ctx, s, func(c *client.Client) (*app.FileContent, error) {
				return c.ReadFile(ctx, in.SandboxID, in.Path, asBase64)
			})
			if err != nil {
				return nil, nil, err
			}
			if fc.Encoding == "utf-8" {
				return textResult(fc.Content), fc, nil
			}
			return nil, fc, nil
		})

	addTool(srv, "sbx_file_write", "Write a file into a sandbox",
		"Write a file into a persistent sandbox's folder (creating parent folders), e.g. a script to run with sbx_exec or data for sbx_run_in. Replaces an existing file.",
		changes, inputSchema[fileWriteArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in fileWriteArgs) (*sdk.CallToolResult, fileWriteResult, error) {
			n, err := call(ctx, s, func(c *client.Client) (int64, error) {
				return c.WriteFile(ctx, in.SandboxID, in.Path, in.Content, in.Encoding)
			})
			if err != nil {
				return nil, fileWriteResult{}, err
			}
			return nil, fileWriteResult{OK: true, Path: in.Path, Bytes: n}, nil
		})

	addTool(srv, "sbx_mount", "Show a host folder inside a sandbox",
		"Make a folder of this machine visible inside a persistent sandbox, read-write or read-only, at target under its folder. Use it to work on the user's project files. "+
			"Only folders the user may share are accepted (system and secret folders are refused).",
		changes, inputSchema[mountArgs](withDefault("readOnly", false)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in mountArgs) (*sdk.CallToolResult, mountResult, error) {
			m := backends.Mount{Source: in.Source, Target: in.Target, ReadOnly: in.ReadOnly, Copy: in.Copy}
			res, err := call(ctx, s, func(c *client.Client) (*app.MountResult, error) { return c.AddMount(ctx, in.SandboxID, m) })
			if err != nil {
				return nil, mountResult{}, err
			}
			return nil, mountResult{OK: true, Mounted: res.Mount.Source, At: res.At, ReadOnly: res.Mount.ReadOnly, notes: mcpNotes(res.Notes)}, nil
		})

	addTool(srv, "sbx_unmount", "Remove a mounted folder from a sandbox",
		"Remove a mount from a persistent sandbox. The real folder on this machine is untouched.",
		changes, inputSchema[unmountArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in unmountArgs) (*sdk.CallToolResult, *client.UnmountReply, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*client.UnmountReply, error) { return c.Unmount(ctx, in.SandboxID, in.Target) })
			return nil, rep, err
		})
}
