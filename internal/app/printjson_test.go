package app

import (
	"bytes"
	"testing"
	"time"
)

// TestPrintJSONTimes: the command line's --json writes every time field
// as the API does (six fractional digits, UTC) where encoding/json would
// cut trailing zeros, leaves a text value that merely looks like one
// alone, and writes <, > and & as they are.
func TestPrintJSONTimes(t *testing.T) {
	var out bytes.Buffer
	c := &cli{stdout: &out}
	v := struct {
		CreatedAt  time.Time  `json:"created_at"`
		At         time.Time  `json:"at"`
		RevokedAt  *time.Time `json:"revoked_at"`
		Note       string     `json:"note"`
		Attempts   []any      `json:"attempts"`
		NotATimeAt string     `json:"not_a_time_at"`
	}{
		CreatedAt:  time.Date(2026, 11, 29, 1, 2, 3, 500_000_000, time.UTC),
		At:         time.Date(2026, 11, 29, 2, 2, 3, 0, time.FixedZone("WAT", 3600)),
		Note:       `<b> & "created_at":"2026-11-29T01:02:03.5Z"`,
		Attempts:   []any{map[string]time.Time{"attempted_at": time.Date(2026, 1, 2, 3, 4, 5, 120_000, time.UTC)}},
		NotATimeAt: "soon",
	}
	if err := c.printJSON(v); err != nil {
		t.Fatal(err)
	}
	want := `{
  "created_at": "2026-11-29T01:02:03.500000Z",
  "at": "2026-11-29T01:02:03.000000Z",
  "revoked_at": null,
  "note": "<b> & \"created_at\":\"2026-11-29T01:02:03.5Z\"",
  "attempts": [
    {
      "attempted_at": "2026-01-02T03:04:05.000120Z"
    }
  ],
  "not_a_time_at": "soon"
}
`
	if out.String() != want {
		t.Errorf("printJSON wrote\n%s\nwant\n%s", out.String(), want)
	}
}
