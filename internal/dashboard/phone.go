package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/momopay/momopay/internal/payment"
)

// Phone is the sandbox's simulated payer phone. internal/app implements it
// on the payment service; the page never settles anything itself.
type Phone interface {
	// Pending lists the merchant's PENDING payment requests to phone.
	Pending(ctx context.Context, merchantID, phone string) ([]payment.Transaction, error)
	// Answer confirms (with a four-digit PIN) or refuses one of them,
	// settling it through the operator-callback path. A request that is
	// not the merchant's, not to phone or no longer PENDING is not found;
	// a bad PIN is EINVALID with field "pin".
	Answer(ctx context.Context, merchantID, phone, transactionID string, confirm bool, pin string) (*payment.Transaction, error)
}

// payerPattern is the contract's payer number: +235 and 8 digits.
var payerPattern = regexp.MustCompile(`^\+235[0-9]{8}$`)

type phonePage struct {
	layout
	Number   string
	Requests []payment.Transaction
	Looked   bool
	// Error is a catalogue key for the whole page; Fields, a key for each
	// field in error, and AnswerID the request whose answer they refer to.
	Error    string
	Fields   map[string]string
	AnswerID string
}

// normalizePayer accepts the number as people type it: spaces, and the
// 8 digits without +235.
func normalizePayer(s string) string {
	s = strings.NewReplacer(" ", "", "-", "", ".", "").Replace(strings.TrimSpace(s))
	if len(s) == 8 && !strings.HasPrefix(s, "+") {
		s = "+235" + s
	}
	return s
}

func (d *Dashboard) phonePage(r *http.Request, number string) (*phonePage, int, error) {
	p := &phonePage{layout: layout{Title: "ph.title", Nav: "phone"}, Number: number}
	if number == "" {
		return p, http.StatusOK, nil
	}
	if !payerPattern.MatchString(number) {
		p.Fields = map[string]string{"number": "ph.number.bad"}
		return p, http.StatusBadRequest, nil
	}
	reqs, err := d.phone.Pending(r.Context(), sessionOf(r).MerchantID, number)
	if err != nil {
		return nil, 0, err
	}
	p.Requests, p.Looked = reqs, true
	return p, http.StatusOK, nil
}

func (d *Dashboard) handlePhone() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.sandbox {
			d.notFound(w, r)
			return
		}
		p, status, err := d.phonePage(r, normalizePayer(r.URL.Query().Get("number")))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, status, "phone", p)
	})
}

// handlePhoneAnswer is the payer's answer to one request.
func (d *Dashboard) handlePhoneAnswer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.sandbox {
			d.notFound(w, r)
			return
		}
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		number := normalizePayer(r.PostForm.Get("number"))
		confirm := r.PostForm.Get("answer") == "confirm"
		if !confirm && r.PostForm.Get("answer") != "refuse" {
			d.badForm(w, r, nil)
			return
		}
		t, err := d.phone.Answer(r.Context(), sessionOf(r).MerchantID, number, r.PathValue("id"), confirm, r.PostForm.Get("pin"))
		if errors.Is(err, payment.ErrNotFound) && wantsJSON(r) {
			d.notFound(w, r)
			return
		}
		if errors.Is(err, payment.ErrNotFound) {
			// Answered meanwhile (by someone else, or another tab), ended,
			// or never this merchant's: the phone says it no longer waits,
			// and shows what still does.
			p, _, err := d.phonePage(r, number)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			p.Error = "ph.gone"
			d.render(w, r, http.StatusNotFound, "phone", p)
			return
		}
		if e, ok := refusal(err); ok {
			p, _, err := d.phonePage(r, number)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			p.AnswerID, p.Error = r.PathValue("id"), "ph.notanswered"
			if _, ok := e.Fields["pin"]; ok {
				p.Error, p.Fields = "", map[string]string{"pin": "ph.pin.bad"}
			}
			d.render(w, r, http.StatusUnprocessableEntity, "phone", p)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		flash := "ph.confirmed.flash"
		if t.Status != payment.StatusSuccess {
			flash = "ph.refused.flash"
		}
		d.redirectWithFlash(w, r, "/phone?"+url.Values{"number": {number}}.Encode(), flash, t.Reference)
	})
}

func init() {
	addMessages(map[string]string{
		"ph.title":           "Sandbox phone",
		"ph.intro":           "Play the payer: type the number a payment was requested from, then confirm it with any four-digit PIN or refuse it. The answer settles the payment as an operator's callback would, webhooks included.",
		"ph.number":          "Payer number",
		"ph.number.help":     "+235 and 8 digits. Numbers other than the scripted test numbers wait for your answer here.",
		"ph.number.bad":      "Enter +235 followed by 8 digits.",
		"ph.look":            "Show requests",
		"ph.none":            "No payment request is waiting for this number.",
		"ph.request":         "%s asks you to pay %s",
		"ph.pin":             "PIN",
		"ph.confirm":         "Confirm",
		"ph.refuse":          "Refuse",
		"ph.pin.bad":         "Enter four digits.",
		"ph.notanswered":     "The answer was not taken. Show the requests again and retry.",
		"ph.gone":            "This payment request no longer waits for an answer: it was answered or it ended.",
		"ph.confirmed.flash": "Payment %s confirmed.",
		"ph.refused.flash":   "Payment %s refused.",
	}, map[string]string{
		"ph.title":           "Téléphone de test",
		"ph.intro":           "Jouez le rôle du payeur : saisissez le numéro auquel un paiement a été demandé, puis confirmez-le avec n'importe quel code PIN à quatre chiffres ou refusez-le. La réponse règle le paiement comme le ferait la notification d'un opérateur, webhooks compris.",
		"ph.number":          "Numéro du payeur",
		"ph.number.help":     "+235 et 8 chiffres. Les numéros autres que les numéros de test prédéfinis attendent votre réponse ici.",
		"ph.number.bad":      "Saisissez +235 suivi de 8 chiffres.",
		"ph.look":            "Voir les demandes",
		"ph.none":            "Aucune demande de paiement n'attend ce numéro.",
		"ph.request":         "%s vous demande de payer %s",
		"ph.pin":             "Code PIN",
		"ph.confirm":         "Confirmer",
		"ph.refuse":          "Refuser",
		"ph.pin.bad":         "Saisissez quatre chiffres.",
		"ph.notanswered":     "La réponse n'a pas été prise en compte. Affichez de nouveau les demandes et réessayez.",
		"ph.gone":            "Cette demande de paiement n'attend plus de réponse : elle a reçu une réponse ou elle a pris fin.",
		"ph.confirmed.flash": "Paiement %s confirmé.",
		"ph.refused.flash":   "Paiement %s refusé.",
	})
}
