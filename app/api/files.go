package api

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app"
)

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	entries, err := s.e.Files(r.PathValue("id"), r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
	return nil
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if isRaw(r) {
		return s.streamFile(w, r)
	}
	limit, err := intParam(r, "limit", app.MaxFileRead, 1, app.MaxFileRead)
	if err != nil {
		return err
	}
	fc, err := s.e.ReadFile(r.PathValue("id"), q.Get("path"), int64(limit), q.Get("encoding") == "base64")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fc)
	return nil
}

// fileBody is the body of a file write.
type fileBody struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Encoding is "utf-8" (default) or "base64".
	Encoding string `json:"encoding"`
}

// isRaw: a file route asked for the file itself as the body (?raw=1),
// not JSON; ServeHTTP then lifts the body bound of a write.
func isRaw(r *http.Request) bool {
	if !strings.HasSuffix(r.URL.Path, "/file") || !strings.HasPrefix(r.URL.Path, "/api/sandbox/sandboxes/") {
		return false
	}
	raw, _ := strconv.ParseBool(r.URL.Query().Get("raw"))
	return raw
}

// streamFile answers GET .../file?raw=1: the whole file as the body.
// Once its first byte is sent an error can only cut the answer short,
// which the reader sees as fewer bytes than Content-Length said.
func (s *Server) streamFile(w http.ResponseWriter, r *http.Request) error {
	started := false
	_, err := s.e.StreamFile(r.PathValue("id"), r.URL.Query().Get("path"), w, func(size int64) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		started = true
	})
	if err != nil && started {
		panic(http.ErrAbortHandler)
	}
	return err
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) error {
	if isRaw(r) {
		// The body is the file, of any size the workspace's quota allows.
		fe, err := s.e.WriteFileFrom(r.PathValue("id"), r.URL.Query().Get("path"), r.Body)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": fe.Path, "bytes": fe.Size})
		return nil
	}
	var b fileBody
	if err := decode(r, &b); err != nil {
		return err
	}
	data := []byte(b.Content)
	switch b.Encoding {
	case "", "utf-8", "utf8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(b.Content); err != nil {
			return &badRequest{field: "content", msg: "content is not valid base64: " + err.Error()}
		}
	default:
		return &badRequest{field: "encoding", msg: "encoding " + strconv.Quote(b.Encoding) + ": use utf-8 or base64"}
	}
	fe, err := s.e.WriteFile(r.PathValue("id"), b.Path, data)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": fe.Path, "bytes": fe.Size})
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	p := r.URL.Query().Get("path")
	if err := s.e.DeleteFile(r.PathValue("id"), p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": p})
	return nil
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Path string `json:"path"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	if err := s.e.Mkdir(r.PathValue("id"), b.Path); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": b.Path})
	return nil
}
