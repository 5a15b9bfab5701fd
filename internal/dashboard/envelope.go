package dashboard

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// Answers to the dashboard's JSON callers (a script signing in, a form
// posted with Accept: application/json), in the contract's error envelope
// as /v1 gives them.

// writeInvalid answers 400 VALIDATION_ERROR naming the bad field, as the
// API does for every validation error.
func writeInvalid(w http.ResponseWriter, message, field, problem string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": "VALIDATION_ERROR", "message": message,
		"status": http.StatusBadRequest, "fields": map[string]string{field: problem}}})
}

// wantsJSON reports a caller of the dashboard's JSON forms (a script
// signing in with a JSON body, or asking for JSON), which is answered in
// the error envelope rather than with a page.
func wantsJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json" || strings.Contains(r.Header.Get("Accept"), "application/json")
}

// writeProblem answers in the contract's error envelope, as /v1 does.
func writeProblem(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // JSON, never HTML: messages read as written, as the API's
	enc.Encode(v)
}
