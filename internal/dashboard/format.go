package dashboard

import (
	"html/template"
	"strconv"
	"strings"
	"time"
)

// ndjamena is the merchants' clock: West Africa Time, UTC+1, no daylight
// saving. Times are stored in UTC and shown in it, with UTC on hover.
var ndjamena = time.FixedZone("WAT", 60*60)

// fcfa writes an amount of XAF the way Chadian merchants read it:
// thousands apart by a space, then FCFA ("1 500 FCFA").
func fcfa(amount int64) string {
	return groupThousands(amount) + " FCFA"
}

func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// when shows t in N'Djamena time, with the UTC instant in the title (on
// hover) and a machine-readable datetime. The zero time shows as a dash.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "–"
	}
	local := t.In(ndjamena).Format("02/01/2006 15:04")
	utc := t.UTC().Format("2006-01-02 15:04:05") + " UTC"
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + utc + `">` + local + `</time>`)
}

// whenPtr is when for an optional time.
func whenPtr(t *time.Time) template.HTML {
	if t == nil {
		return "–"
	}
	return when(*t)
}

// dayOf is the N'Djamena calendar day of t, as the daily totals key it.
func dayOf(t time.Time) string { return t.In(ndjamena).Format(time.DateOnly) }
