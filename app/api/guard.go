package api

import (
	"net/http"

	"github.com/senclaw/sandbox/app"
)

// guardCheckBody is the body of POST /guard/check.
type guardCheckBody struct {
	// Command is a shell command line; Argv an exact argument vector.
	// Exactly one is given.
	Command string   `json:"command"`
	Argv    []string `json:"argv"`
	// Path is host (the documented off paths, the default) or sandbox.
	Path string `json:"path"`
	// Cwd is where relative paths resolve (the user's home when empty).
	Cwd string `json:"cwd"`
}

// guardCheck answers what the shell guard does with a command on a
// path, with the settings of now; nothing runs (senclaw guard check).
func (s *Server) guardCheck(w http.ResponseWriter, r *http.Request) error {
	var b guardCheckBody
	if err := decode(r, &b); err != nil {
		return err
	}
	rep, err := s.e.GuardCheck(b.Command, b.Argv, b.Path, b.Cwd)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// policyCheck answers what the layered policy files make of a command in
// a project, running nothing (senclaw policy check): the effective
// policy with the source of every value, and whether the run would be
// refused and why. A broken policy file is a 200 with brokenFile.
func (s *Server) policyCheck(w http.ResponseWriter, r *http.Request) error {
	var b app.PolicyCheckRequest
	if err := decode(r, &b); err != nil {
		return err
	}
	rep, err := s.e.PolicyCheck(r.Context(), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// policyLearn runs a command once in its project, traced, in the widest
// sandbox the owner's policy allows it, and answers the narrowest
// project policy under which it would have run (senclaw run --learn);
// with write, it saves it as the project's .senclaw/policy.json.
func (s *Server) policyLearn(w http.ResponseWriter, r *http.Request) error {
	var b app.PolicyLearnRequest
	if err := decode(r, &b); err != nil {
		return err
	}
	rep, err := s.e.PolicyLearn(r.Context(), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// policyApply saves a policy (a learn run's proposal) as a project's
// .senclaw/policy.json, checked first, and answers the check after.
func (s *Server) policyApply(w http.ResponseWriter, r *http.Request) error {
	var b app.PolicyApplyRequest
	if err := decode(r, &b); err != nil {
		return err
	}
	rep, err := s.e.PolicyApply(r.Context(), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
