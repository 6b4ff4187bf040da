package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/tenants"
)

// tenantRoutes are the tenants (the owner's alone: tenants:admin).
func (s *Server) tenantRoutes() {
	s.route("GET /tenants", s.withTenants(func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]any{"tenants": d.List()})
		return nil
	}))
	s.route("POST /tenants", s.withTenants(func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error {
		name, spec, err := decodeTenant(r, true)
		if err != nil {
			return err
		}
		added, err := d.Add(name, spec)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, added)
		return nil
	}))
	s.route("GET /tenants/{id}", s.withTenants(func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error {
		v, err := d.Get(r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}))
	s.route("PATCH /tenants/{id}", s.withTenants(func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error {
		_, spec, err := decodeTenant(r, false)
		if err != nil {
			return err
		}
		v, err := d.Set(r.PathValue("id"), spec)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}))
	s.route("DELETE /tenants/{id}", s.withTenants(func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error {
		purge, _ := strconv.ParseBool(r.URL.Query().Get("purge"))
		v, err := d.Remove(r.PathValue("id"), purge)
		if err != nil {
			return err
		}
		files := "kept at " + v.Dir
		if purge {
			files = "purged"
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": v.Name, "files": files})
		return nil
	}))
}

// decodeTenant reads {name?, quota?, tools?, paths?}; tools null removes
// the tool policy.
func decodeTenant(r *http.Request, add bool) (string, tenants.Spec, error) {
	var b struct {
		Name  string           `json:"name"`
		Quota *principal.Quota `json:"quota"`
		Tools json.RawMessage  `json:"tools"`
		Paths *[]string        `json:"paths"`
	}
	var spec tenants.Spec
	if err := decode(r, &b); err != nil {
		return "", spec, err
	}
	if add && b.Name == "" {
		return "", spec, &badRequest{field: "name", msg: "name: give the tenant's name"}
	}
	if !add && b.Name != "" {
		return "", spec, &badRequest{field: "name", msg: "name: a tenant's name cannot be changed; add a new tenant instead"}
	}
	spec.Quota, spec.Paths = b.Quota, b.Paths
	switch string(b.Tools) {
	case "":
	case "null":
		spec.AllTools = true
	default:
		var tools []string
		if err := json.Unmarshal(b.Tools, &tools); err != nil {
			return "", spec, &badRequest{field: "tools", msg: "tools: a list of tool and group names, or null"}
		}
		spec.Tools = &tools
	}
	return b.Name, spec, nil
}

// withTenants answers 503 when this server has no tenants.
func (s *Server) withTenants(h func(d *tenants.Directory, w http.ResponseWriter, r *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Tenants == nil {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "this daemon keeps no tenants (its engine could not start; see the daemon's log)"})
			return nil
		}
		return h(s.opts.Tenants, w, r)
	}
}
