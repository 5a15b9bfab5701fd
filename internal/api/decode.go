package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/momopay/momopay/internal/payment"
)

// bodyError is a VALIDATION_ERROR about the body as a whole. It names
// "body" in fields, because the contract gives every validation error its
// fields and no parameter is at fault here.
func bodyError(problem string) error {
	return &payment.Error{Code: payment.EINVALID, Message: "the request body " + problem,
		Fields: map[string]string{"body": problem}}
}

// decodeObject reads a JSON object into its raw members, so that each field
// can be checked on its own. Raw members keep the bytes as sent: invalid
// UTF-8 and lone surrogates are still visible there, where a decoded string
// would have them silently replaced by U+FFFD.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, bodyError("is empty: send a JSON object")
	}
	if bytes.HasPrefix(body, []byte("\uFEFF")) {
		// Windows editors and PowerShell write one; encoding/json would
		// report it as an "invalid character 'ï'".
		return nil, bodyError("starts with a byte order mark (U+FEFF): send the JSON without it")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, bodyError("must be a JSON object")
		}
		return nil, bodyError("is not valid JSON: " + err.Error())
	}
	if raw == nil { // the body was null
		return nil, bodyError("must be a JSON object")
	}
	if name, ok := repeatedMember(body); ok {
		// encoding/json keeps the last; a proxy or firewall that checked
		// the first would have passed another request than this one.
		return nil, bodyError(fmt.Sprintf("has the field %q more than once", name))
	}
	if !isRawText(body) {
		clean := true
		for _, v := range raw {
			clean = clean && isRawText(v)
		}
		// The members are fine, so a member's name is not: a name that
		// cannot be read cannot be named.
		if clean {
			return nil, bodyError("has a field name that is not valid UTF-8 text")
		}
	}
	return raw, nil
}

// repeatedMember returns the first member name that the JSON object body
// (already known to be valid) holds twice.
func repeatedMember(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the opening brace
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// rawTextProblem is the message for a JSON string that is not text.
const rawTextProblem = "must be valid UTF-8 text (no invalid bytes, no lone surrogate escapes)"

// isRawText reports whether the raw JSON b is valid UTF-8 and escapes no
// lone UTF-16 surrogate ("\ud800"): encoding/json would decode either to
// U+FFFD without a word, and store a text the merchant never sent.
func isRawText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := escapedUnit(b, i)
		if !ok {
			return false
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF: // a low surrogate with no high one before it
			return false
		case r >= 0xD800 && r <= 0xDBFF:
			low, ok := escapedUnit(b, i+6)
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 11 // the pair
		default:
			i += 5
		}
	}
	return true
}

// escapedUnit reads the UTF-16 unit of the \uXXXX escape starting at b[i].
func escapedUnit(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
