package api

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// Messages for list parameters, worded as payment.ListFilter.Validate words
// them, so a merchant reads one rule however it was broken.
const (
	pageProblem = "must be an integer of at least 1"
	// pageRangeProblem names the upper bound too, for a number beyond it.
	pageRangeProblem = "must be an integer from 1 to 9223372036854775807"
	perPageProblem   = "must be an integer from 1 to 100"
	boundProblem     = "must be an ISO 8601 date-time (2026-11-01T09:30:00Z, 2026-11-01T10:30%2B01:00) or a date (2026-11-01)"
	rangeProblem     = "must be between 1970-01-01 and 9999-12-31"
)

// parseListFilter reads the list query (contract §4.3). Anything it cannot
// read exactly is a 400 naming the parameter, never a silently broader list:
// unknown parameters (there is no reference filter), unreadable pairs,
// repeated and empty values.
func parseListFilter(rawQuery string) (payment.ListFilter, error) {
	f := payment.ListFilter{Page: 1, PerPage: 20}
	q, fields := parseQuery(rawQuery)
	for name, vals := range q {
		switch name {
		case "page", "per_page", "status", "operator", "from", "to":
		default:
			fields[name] = "unknown parameter"
			continue
		}
		if len(vals) != 1 {
			fields[name] = "must be given once"
			continue
		}
		v := vals[0]
		if v == "" {
			fields[name] = "must not be empty: leave the parameter out for no filter"
			continue
		}
		var err error
		problem := ""
		switch name {
		case "page":
			if f.Page, err = strconv.Atoi(v); errors.Is(err, strconv.ErrRange) {
				problem = pageRangeProblem // a number, but past any page there can be
			} else if err != nil {
				problem = pageProblem
			}
		case "per_page":
			if f.PerPage, err = strconv.Atoi(v); err != nil {
				problem = perPageProblem
			}
		case "status":
			f.Status = payment.Status(v)
		case "operator":
			f.Operator = payment.Operator(v)
		case "from":
			f.From, problem = parseBound(v, false)
		case "to":
			f.To, problem = parseBound(v, true)
		}
		if problem != "" {
			fields[name] = problem
		}
	}
	if err := f.Validate(); err != nil {
		e := err.(*payment.Error)
		for k, v := range e.Fields {
			if _, seen := fields[k]; !seen {
				fields[k] = v
			}
		}
	}
	if len(fields) > 0 {
		return f, &payment.Error{Code: payment.EINVALID, Message: "invalid list filter", Fields: fields}
	}
	return f, nil
}

// parseQuery is url.ParseQuery with its error kept. r.URL.Query() drops the
// pairs it cannot read (a ';' separator, a bad %-escape), which would list
// unfiltered what the merchant asked to filter; here each such pair is
// named by its parameter ("query" when even the name cannot be read).
func parseQuery(raw string) (url.Values, map[string]string) {
	fields := map[string]string{}
	q, err := url.ParseQuery(raw)
	if err == nil {
		return q, fields
	}
	for pair := range strings.SplitSeq(raw, "&") {
		if _, err := url.ParseQuery(pair); err == nil {
			continue
		}
		name, _, _ := strings.Cut(pair, "=")
		name, _, _ = strings.Cut(name, ";")
		if n, err := url.QueryUnescape(name); err == nil && n != "" {
			name = n
		} else {
			name = "query"
		}
		if strings.Contains(pair, ";") {
			fields[name] = "contains a semicolon, which does not separate parameters: use & (and %3B for a literal ;)"
		} else {
			fields[name] = "is not correctly percent-encoded"
		}
	}
	return q, fields
}

// boundForms are the ISO 8601 forms a list bound may take, with the span
// of time each names. RFC 3339 (any number of fractional digits) names an
// instant. A form without seconds names its whole minute and a date its
// whole UTC day, so that a to of that precision includes all of it
// (to=2026-11-01 includes everything created that day). The basic forms
// (no dashes or colons) are ISO 8601's too. A time without a zone is
// read in UTC, as a date is and as every time the API returns is written
// (Python's datetime.utcnow().isoformat() gives that form).
var boundForms = []struct {
	layout string
	span   time.Duration
}{
	{time.RFC3339Nano, 0},
	{"20060102T150405Z0700", 0}, // takes fractional seconds as well
	// An offset without its colon after an extended date and time, as
	// date +%FT%T%z prints it: ISO 8601 would not mix the two, but what it
	// means is plain.
	{"2006-01-02T15:04:05Z0700", 0},
	{"2006-01-02T15:04Z07:00", time.Minute},
	{"2006-01-02T15:04Z0700", time.Minute},
	{"20060102T1504Z0700", time.Minute},
	{"2006-01-02T15:04:05", 0}, // fractional seconds too; no zone: UTC
	{"20060102T150405", 0},
	{"2006-01-02T15:04", time.Minute},
	{"20060102T1504", time.Minute},
	{time.DateOnly, 24 * time.Hour},
	{"20060102", 24 * time.Hour},
}

// offsetTail is a bound's UTC offset, with or without its colon; its
// group is the minutes.
var offsetTail = regexp.MustCompile(`[+-][0-9]{2}:?([0-9]{2})$`)

// badOffsetMinutes reports whether bound v ends in a UTC offset whose
// minutes are 60 or more: Go reads +00:60 as an hour, which would move
// the bound an hour without a word.
func badOffsetMinutes(v string) bool {
	m := offsetTail.FindStringSubmatch(v)
	return m != nil && m[1] >= "60"
}

// parseBound reads a from or to bound (boundForms); ISO 8601 and RFC 3339
// allow a lower-case t and z. A to names the end of its span, a from its
// start. A bound outside payment.MinFilterTime..MaxFilterTime is refused
// rather than taken: the zero time (0001-01-01T00:00:00Z) would otherwise
// read as "no bound". It returns the problem, or "".
func parseBound(v string, end bool) (time.Time, string) {
	var t time.Time
	parsed := false
	for _, f := range boundForms {
		if p, err := time.Parse(f.layout, strings.ToUpper(v)); err == nil {
			t, parsed = p, true
			if end && f.span > 0 {
				t = t.Add(f.span - time.Microsecond)
			}
			break
		}
	}
	if !parsed && strings.Contains(v, " ") {
		return time.Time{}, boundProblem + "; in a query string a + is read as a space: write an offset's + as %2B"
	}
	if _, offset := t.Zone(); !parsed || offset >= 24*60*60 || offset <= -24*60*60 || badOffsetMinutes(v) {
		return time.Time{}, boundProblem // Go takes +24:00 and +00:60; offsets end at 23:59
	}
	t = t.UTC()
	// The bound is kept as given, and rounded to the microsecond only
	// where times are compared (ListFilter.Microseconds): from and to of
	// one instant finer than a microsecond are not "to before from". The
	// range is checked on the rounded value, the one compared.
	if r := payment.MicrosecondBound(t, end); r.Before(payment.MinFilterTime) || r.After(payment.MaxFilterTime) {
		return time.Time{}, rangeProblem
	}
	return t, ""
}
