package api

import (
	"encoding/base64"
	"net/http"
	"strconv"

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

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) error {
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
