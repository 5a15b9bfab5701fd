package dashboard

import (
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// auditPageSize is how many entries one page of the log shows.
const auditPageSize = 50

type auditPage struct {
	layout
	Entries []team.AuditEntry
	// Older is the address of the next page ("" on the last), its query
	// encoded here: the template escapes a string in a query as one value.
	Older string
}

// sentenceTargets are the actions whose target is written in English
// words (a refund's sentence, a re-send's count), not only names, ids and
// addresses: a French page translates the service's own phrase or marks
// the sentence as English for screen readers.
var sentenceTargets = map[string]bool{
	team.ActionRefundRequested: true, team.ActionRefundAnswered: true,
	team.ActionAutoRefundOn: true, team.ActionAutoRefundOff: true,
	team.ActionResentSince: true, team.ActionCaseResolved: true,
}

// Target is an entry's target as the page shows it.
func (p *auditPage) Target(e team.AuditEntry) template.HTML {
	if sentenceTargets[e.Action] {
		return p.Said(e.Target)
	}
	return template.HTML(template.HTMLEscapeString(e.Target))
}

// handleAudit lists the log newest first, a page at a time: ?before=TIME
// and ?id=ID continue after the last entry shown.
func (d *Dashboard) handleAudit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		before, _ := time.Parse(time.RFC3339Nano, q.Get("before"))
		id := q.Get("id")
		if !payment.ValidID(id) {
			id = "" // entries' ids are UUIDs; anything else continues nowhere
		}
		entries, err := d.auditLog.List(r.Context(), sessionOf(r).MerchantID, before, id, auditPageSize+1)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		p := &auditPage{layout: layout{Title: "audit.title", Nav: "audit"}, Entries: entries}
		if len(entries) > auditPageSize {
			p.Entries = entries[:auditPageSize]
			last := p.Entries[auditPageSize-1]
			p.Older = "/audit?" + url.Values{"before": {last.At.UTC().Format(time.RFC3339Nano)}, "id": {last.ID}}.Encode()
		}
		d.render(w, r, http.StatusOK, "audit", p)
	})
}
