package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Cases reads and resolves a merchant's reconciliation cases: operator
// answers that came after a payment was final and contradict it. Every
// method is scoped to merchantID; another merchant's case is not found.
type Cases interface {
	// ForMerchantPage lists at most limit cases, newest first, after the
	// case before ("" for the newest).
	ForMerchantPage(ctx context.Context, merchantID string, openOnly bool, before string, limit int) ([]payment.ReconciliationCase, error)
	// Resolve refuses an empty or overlong note (EINVALID, field "note")
	// and a case resolved already (EUNPROCESSABLE).
	Resolve(ctx context.Context, merchantID, id, by, note string, at time.Time) (*payment.ReconciliationCase, error)
}

type reconciliationPage struct {
	layout
	Cases    []caseView
	OpenOnly bool
	// NextURL is the page of older cases, when there are more;
	// NewestURL the first page, from a later one.
	NextURL   string
	NewestURL string
	// Query is this page's own (open, before), which its resolve forms
	// carry: a refused note is shown again on the page it was written on,
	// and a resolved case leads back there.
	Query string
	// The resolve form that was refused, refilled with its message.
	CaseID string
	Note   string
	Error  string
	Fields map[string]string
}

// ResolveURL is where the resolve form of case id posts: it carries the
// page's own query.
func (p *reconciliationPage) ResolveURL(id string) string {
	u := "/reconciliation/" + url.PathEscape(id) + "/resolve"
	if p.Query != "" {
		u += "?" + p.Query
	}
	return u
}

// casesPerPage is how many cases a page of /reconciliation shows; the
// older ones are a link away.
const casesPerPage = 50

func (d *Dashboard) reconciliationPage(r *http.Request, openOnly bool) (*reconciliationPage, error) {
	merchant := sessionOf(r).MerchantID
	before := r.URL.Query().Get("before")
	cases, err := d.cases.ForMerchantPage(r.Context(), merchant, openOnly, before, casesPerPage+1)
	if err != nil {
		return nil, err
	}
	page := &reconciliationPage{layout: layout{Title: "rc.title", Nav: "reconciliation"}, OpenOnly: openOnly, Query: casesQuery(openOnly, before)}
	if before != "" {
		page.NewestURL = casesURL(openOnly, "")
	}
	if len(cases) > casesPerPage {
		cases = cases[:casesPerPage]
		page.NextURL = casesURL(openOnly, cases[len(cases)-1].ID)
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.TransactionID
	}
	refunds, err := d.refunds.List(r.Context(), merchant, ids...)
	if err != nil {
		return nil, err
	}
	byPayment := make(map[string][]payment.Refund)
	for _, rf := range refunds {
		byPayment[rf.TransactionID] = append(byPayment[rf.TransactionID], rf)
	}
	views := make([]caseView, len(cases))
	for i, c := range cases {
		views[i] = caseView{ReconciliationCase: c, Refunds: byPayment[c.TransactionID]}
	}
	page.Cases = views
	return page, nil
}

// caseView is a case with the refunds of its payment: a late SUCCESS the
// service refunded by itself must not be paid back by hand as well.
type caseView struct {
	payment.ReconciliationCase
	Refunds []payment.Refund
}

// Refunded is the refund that gave the money back, if any.
func (c caseView) Refunded() *payment.Refund {
	for i := range c.Refunds {
		if c.Refunds[i].Status == payment.RefundRefunded {
			return &c.Refunds[i]
		}
	}
	return nil
}

// RefundInDoubt is a refund whose fate is not known (asked, no answer),
// if any: the money may have gone back already.
func (c caseView) RefundInDoubt() *payment.Refund {
	for i := range c.Refunds {
		if s := c.Refunds[i].Status; s == payment.RefundRequested || s == payment.RefundUnknown {
			return &c.Refunds[i]
		}
	}
	return nil
}

func (d *Dashboard) handleReconciliation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := d.reconciliationPage(r, r.URL.Query().Get("open") == "1")
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "reconciliation", p)
	})
}

// handleCaseResolve closes a case with a note; who closed it comes from
// the session.
func (d *Dashboard) handleCaseResolve() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		s, id, note := sessionOf(r), r.PathValue("id"), r.PostForm.Get("note")
		c, err := d.cases.Resolve(r.Context(), s.MerchantID, id, s.User.Email, note, d.now())
		if e, ok := refusal(err); ok {
			p, err := d.reconciliationPage(r, r.URL.Query().Get("open") == "1")
			if err != nil {
				d.fail(w, r, err)
				return
			}
			p.CaseID, p.Note, p.Error = id, note, "rc.refused"
			switch _, bad := e.Fields["note"]; {
			case errors.Is(e, payment.ErrCaseResolved):
				p.Error = "rc.already"
			case bad:
				p.Error, p.Fields = "", map[string]string{"note": noteProblem(note)}
			}
			d.render(w, r, http.StatusUnprocessableEntity, "reconciliation", p)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionCaseResolved, c.ID+" (transaction "+c.TransactionID+")")
		q := r.URL.Query()
		d.redirectWithFlash(w, r, casesURL(q.Get("open") == "1", q.Get("before")), "rc.resolved.flash", "")
	})
}

// casesQuery is the query of a page of cases: only the open ones when
// openOnly, after the case before when it is an id ("" for the newest).
// Nothing else from a request reaches a link, a form or a redirect.
func casesQuery(openOnly bool, before string) string {
	q := url.Values{}
	if openOnly {
		q.Set("open", "1")
	}
	if payment.ValidID(before) {
		q.Set("before", before)
	}
	return q.Encode()
}

// casesURL is the address of a page of cases (casesQuery).
func casesURL(openOnly bool, before string) string {
	if q := casesQuery(openOnly, before); q != "" {
		return "/reconciliation?" + q
	}
	return "/reconciliation"
}

func init() {
	addMessages(map[string]string{
		"rc.title":          "Reconciliation cases",
		"rc.intro":          "An operator answered after a payment was already final, and the answer contradicts it. The payment keeps its status; check with the operator, settle the money with the payer, and note what you did.",
		"rc.openonly":       "Open cases only",
		"rc.all":            "All cases",
		"rc.refunded":       "The payer was refunded %s (%s): there is nothing to pay back.",
		"rc.refund.doubt":   "A refund was asked and its answer is unknown: the money may have gone back already. Check the operator's portal before paying anything back.",
		"rc.what":           "The payment's status was “%s” when the operator reported “%s”.",
		"rc.source":         "Reported by",
		"rc.detail":         "Operator's words",
		"rc.transaction":    "Transaction",
		"rc.open":           "Open",
		"rc.resolved":       "Resolved",
		"rc.resolvedby":     "Resolved by %s",
		"rc.note":           "Note",
		"rc.note.help":      "What was done: refund, credit, confirmation from the operator…",
		"rc.resolve":        "Mark resolved",
		"rc.resolved.flash": "The case was marked resolved.",
		"rc.already":        "This case was resolved already: its note is below.",
		"rc.refused":        "The case was not marked resolved.",
		"rc.note.empty":     "Say what was done about this case.",
		"rc.note.long":      fmt.Sprintf("The note must be at most %d characters long.", payment.MaxResolutionNote),
		"rc.note.text":      "The note must be plain text, without control characters.",
		"rc.none":           "No case: every late answer agreed with the payment's status.",
		"rc.none.here":      "No case on this page (those it showed may have been resolved): the newest cases are on the first page.",
		"source.callback":   "operator callback",
		"source.poll":       "status poll",
		"source.expiry":     "expiry check",
		"source.sandbox":    "sandbox payer",
		"source.push":       "answer to the payment request",
		"source.late_check": "check after TIMEOUT",
	}, map[string]string{
		"rc.title":          "Cas de rapprochement",
		"rc.intro":          "Un opérateur a répondu après qu'un paiement était déjà final, et sa réponse le contredit. Le paiement garde son statut ; vérifiez auprès de l'opérateur, réglez l'argent avec le payeur et notez ce que vous avez fait.",
		"rc.openonly":       "Cas ouverts seulement",
		"rc.all":            "Tous les cas",
		"rc.refunded":       "Le payeur a été remboursé de %s (%s) : il n'y a rien à lui rendre.",
		"rc.refund.doubt":   "Un remboursement a été demandé et sa réponse est inconnue : l'argent a peut-être déjà été rendu. Vérifiez sur le portail de l'opérateur avant de rendre quoi que ce soit.",
		"rc.what":           "Le paiement avait le statut « %s » quand l'opérateur a signalé « %s ».",
		"rc.source":         "Signalé par",
		"rc.detail":         "Message de l'opérateur",
		"rc.transaction":    "Transaction",
		"rc.open":           "Ouvert",
		"rc.resolved":       "Résolu",
		"rc.resolvedby":     "Résolu par %s",
		"rc.note":           "Note",
		"rc.note.help":      "Ce qui a été fait : remboursement, crédit, confirmation de l'opérateur…",
		"rc.resolve":        "Marquer comme résolu",
		"rc.resolved.flash": "Le cas a été marqué comme résolu.",
		"rc.already":        "Ce cas a déjà été résolu : sa note figure ci-dessous.",
		"rc.refused":        "Le cas n'a pas été marqué comme résolu.",
		"rc.note.empty":     "Indiquez ce qui a été fait pour ce cas.",
		"rc.note.long":      fmt.Sprintf("La note doit compter au plus %d caractères.", payment.MaxResolutionNote),
		"rc.note.text":      "La note doit être du texte simple, sans caractères de contrôle.",
		"rc.none":           "Aucun cas : chaque réponse tardive concordait avec le statut du paiement.",
		"rc.none.here":      "Aucun cas sur cette page (ceux qu'elle montrait ont pu être résolus) : les cas les plus récents sont sur la première page.",
		"source.callback":   "notification de l'opérateur",
		"source.poll":       "interrogation du statut",
		"source.expiry":     "vérification à l'expiration",
		"source.sandbox":    "payeur du bac à sable",
		"source.push":       "réponse à la demande de paiement",
		"source.late_check": "vérification après dépassement du délai",
	})
}
