package engineapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode"
)

// Error is the daemon's answer to a request it refused or failed.
type Error struct {
	// Status is the HTTP status: 404 for something that does not exist,
	// 409 for a conflict (a name in use, a container not running).
	Status int
	// Message is the daemon's message, bounded and without control
	// characters.
	Message string
}

func (e *Error) Error() string {
	return "Error response from daemon: " + e.Message
}

// IsNotFound reports whether err is the daemon saying that what was named
// does not exist.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is the daemon refusing a request that
// conflicts with the state of what it names (a stopped container's exec).
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// maxMessage bounds an error message (in runes).
const maxMessage = 1024

// errorOf reads a failed answer: its JSON {"message": ...}, or its text.
func errorOf(resp *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &body) == nil && body.Message != "" {
		msg = body.Message
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Status: resp.StatusCode, Message: cleanMessage(msg)}
}

// cleanMessage keeps a daemon's message printable and short.
func cleanMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var sb strings.Builder
	n := 0
	for _, r := range s {
		if n == maxMessage {
			sb.WriteString("…")
			break
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		sb.WriteRune(r)
		n++
	}
	return strings.TrimSpace(sb.String())
}
