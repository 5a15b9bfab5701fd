package airtel

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// maxAnswerDepth is how deeply an answer's objects and arrays may nest:
// Airtel's nest three deep.
const maxAnswerDepth = 32

// saysTwoThings reports an answer or callback that names one field twice
// in one object, or nests deeper than maxAnswerDepth. encoding/json keeps
// the last of two equal keys, so {"status":"TS","status":"TF"} would
// settle a payment on whichever came last: an answer that says two things
// says neither, and is read as unreadable (the payment stays PENDING and
// is asked about again). A body that is not JSON at all is left to the
// caller's own decoding, which says so.
func saysTwoThings(body []byte) error {
	type frame struct {
		object  bool
		wantKey bool // an object's next token is a key
		keys    map[string]bool
	}
	var stack []frame
	d := json.NewDecoder(bytes.NewReader(body))
	for {
		t, err := d.Token()
		if err != nil {
			return nil // the end, or not JSON: Unmarshal reports that
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].wantKey {
			if k, ok := t.(string); ok {
				if stack[top].keys[k] {
					return fmt.Errorf("field %q given twice", k)
				}
				if stack[top].keys == nil {
					stack[top].keys = map[string]bool{}
				}
				stack[top].keys[k], stack[top].wantKey = true, false
				continue
			}
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxAnswerDepth {
				return fmt.Errorf("nested deeper than %d", maxAnswerDepth)
			}
			if top >= 0 {
				stack[top].wantKey = true // after this value, a key
			}
			stack = append(stack, frame{object: t == json.Delim('{'), wantKey: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		default:
			if top >= 0 {
				stack[top].wantKey = true
			}
		}
	}
}
