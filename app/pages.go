package app

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// ListQuery asks for one page of a list: the items that Match, skipping
// Offset of them, at most Limit (0: all).
type ListQuery struct {
	Offset int
	Limit  int
	// Match, when not empty, keeps the items that contain it, ignoring
	// case: a sandbox's name, id, backend, image or state; a run's
	// command, language, sandbox, source or isolation.
	Match string
	// Source, when not empty, keeps the runs of one source (scheduler,
	// agent-shell, mcp...); sandboxes ignore it.
	Source string
	// Refused keeps only the runs that were refused (nothing ran).
	Refused bool
	// AllTenants keeps every tenant's items (the owner's lists); else
	// only Tenant's ("" the owner's own).
	AllTenants bool
	Tenant     string
}

// keeps reports whether q keeps an item of tenant.
func (q ListQuery) keeps(tenant string) bool { return q.AllTenants || q.Tenant == tenant }

// SandboxPage is one page of the sandboxes, most recently used first.
type SandboxPage struct {
	Sandboxes []Sandbox `json:"sandboxes"`
	// Total is how many sandboxes match the query, on every page.
	Total int `json:"total"`
	// Running is how many of all the sandboxes have a run going.
	Running int `json:"running"`
}

// RunPage is one page of run records, newest first.
type RunPage struct {
	Runs []RunRecord `json:"runs"`
	// Total is how many records match the query, on every page.
	Total int `json:"total"`
}

// SandboxesPage returns one page of the sandboxes. Only the page's
// sandboxes are asked about what their backend keeps (a container), so a
// page of an engine with thousands costs what the page does.
func (e *Engine) SandboxesPage(q ListQuery) (SandboxPage, error) {
	var all []Sandbox
	err := e.store.EachSandbox(func(data []byte) error {
		var sb Sandbox
		if err := json.Unmarshal(data, &sb); err != nil {
			return err
		}
		e.withRunState(&sb)
		all = append(all, sb)
		return nil
	})
	if err != nil {
		return SandboxPage{}, err
	}
	page := SandboxPage{Sandboxes: []Sandbox{}}
	match := strings.ToLower(strings.TrimSpace(q.Match))
	kept := all[:0]
	for _, sb := range all {
		if !q.keeps(sb.Tenant) {
			continue
		}
		if sb.State == StateRunning {
			page.Running++
		}
		if match == "" || sandboxMatches(&sb, match) {
			kept = append(kept, sb)
		}
	}
	slices.SortStableFunc(kept, func(a, b Sandbox) int {
		ta, tb := a.LastUsedAt, b.LastUsedAt
		if ta.IsZero() {
			ta = a.CreatedAt
		}
		if tb.IsZero() {
			tb = b.CreatedAt
		}
		return tb.Compare(ta)
	})
	page.Total = len(kept)
	for _, sb := range window(kept, q.Offset, q.Limit) {
		e.withContainerState(&sb)
		page.Sandboxes = append(page.Sandboxes, sb)
	}
	return page, nil
}

func sandboxMatches(sb *Sandbox, match string) bool {
	for _, f := range []string{sb.Name, sb.ID, sb.Backend, sb.Engine, sb.Image, sb.State, sb.Kind} {
		if strings.Contains(strings.ToLower(f), match) {
			return true
		}
	}
	return false
}

// window is the part of list from offset, at most limit long (0: all).
func window[T any](list []T, offset, limit int) []T {
	if offset >= len(list) {
		return nil
	}
	list = list[max(offset, 0):]
	if limit > 0 && limit < len(list) {
		list = list[:limit]
	}
	return list
}

// RunsPage returns one page of the run records, newest first; only
// sandboxID's when it is given.
func (e *Engine) RunsPage(sandboxID string, q ListQuery) (RunPage, error) {
	e.records.flush()
	page := RunPage{Runs: []RunRecord{}}
	var match func([]byte) bool
	m := strings.ToLower(strings.TrimSpace(q.Match))
	if m != "" || q.Source != "" || q.Refused || !q.AllTenants {
		raw := []byte(m)
		match = func(data []byte) bool {
			// Most records do not hold the text at all: only those
			// that do are decoded and looked at field by field.
			if m != "" && !bytes.Contains(bytes.ToLower(data), raw) {
				return false
			}
			if !q.AllTenants && q.Tenant == "" && bytes.Contains(data, []byte(`"tenant":"`)) {
				return false // another tenant's, without decoding it
			}
			var r RunRecord
			if json.Unmarshal(data, &r) != nil {
				return false
			}
			if !q.keeps(r.Tenant) {
				return false
			}
			if q.Source != "" && r.Source != q.Source {
				return false
			}
			if q.Refused && !strings.HasPrefix(r.Isolation, "refused") {
				return false
			}
			if m == "" {
				return true
			}
			for _, f := range []string{r.Command, r.Language, r.SandboxName, r.SandboxID, r.Source, r.Isolation} {
				if strings.Contains(strings.ToLower(f), m) {
					return true
				}
			}
			return false
		}
	}
	var decodeErr error
	total, err := e.store.PageRuns(sandboxID, match, q.Offset, q.Limit, func(data []byte) {
		var r RunRecord
		if err := json.Unmarshal(data, &r); err != nil {
			decodeErr = err
			return
		}
		page.Runs = append(page.Runs, r)
	})
	if err == nil {
		err = decodeErr
	}
	page.Total = total
	return page, err
}
