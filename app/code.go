package app

import (
	"fmt"
	"path/filepath"
	"strings"
)

// language is how one code language is run.
type language struct {
	name   string
	interp string
	ext    string
}

var languages = []language{
	{"python", "python3", ".py"},
	{"node", "node", ".mjs"},
	{"bash", "bash", ".sh"},
}

var languageAliases = map[string]string{
	"python": "python", "python3": "python", "py": "python",
	"node": "node", "javascript": "node", "js": "node", "nodejs": "node",
	"bash": "bash", "sh": "bash", "shell": "bash",
}

// Languages lists the code languages.
func Languages() []string {
	out := make([]string, len(languages))
	for i, l := range languages {
		out[i] = l.name
	}
	return out
}

// planCode resolves a code run: the language, the interpreter, the source.
func (e *Engine) planCode(p *plan) error {
	name, ok := languageAliases[strings.ToLower(strings.TrimSpace(p.req.Language))]
	if !ok {
		return badField("language", p.req.Language, "unknown language: use %s", strings.Join(Languages(), ", "))
	}
	if strings.TrimSpace(p.req.Code) == "" {
		return badField("code", "", "is empty: give the source to run")
	}
	if len(p.req.Code) > MaxCodeBytes {
		return badField("code", nil, "is larger than %d MiB", MaxCodeBytes>>20)
	}
	for _, l := range languages {
		if l.name == name {
			p.req.Language = name
			p.kind = "code"
			p.argv = []string{l.interp}
			p.code = p.req.Code
			p.codeFile = l.ext
			p.display = firstLine(p.req.Code)
		}
	}
	return nil
}

// writeCode writes the source into .runs/ of the workspace and returns its
// path as the sandboxed process sees it.
func (e *Engine) writeCode(p *plan, runID string) (string, error) {
	f, err := e.createInWorkspace(p.sb, ".runs", runID+p.codeFile)
	if err != nil {
		return "", fmt.Errorf("writing the code file: %w", err)
	}
	_, err = f.WriteString(p.code)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing the code file: %w", err)
	}
	return filepath.Join(p.sb.Workspace, ".runs", runID+p.codeFile), nil
}

func firstLine(code string) string {
	code = strings.TrimSpace(code)
	if i := strings.IndexByte(code, '\n'); i >= 0 {
		return code[:i] + " …"
	}
	return code
}
