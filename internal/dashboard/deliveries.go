package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/webhook"
)

// deliveryList is the deliveries partial's data: the page's layout (for
// its language and the user's permissions) and the deliveries.
type deliveryList struct {
	*layout
	Deliveries []webhook.Delivery
	// Actions shows the re-send buttons; Return is where they come back.
	Actions bool
	Return  string
}

type deliveriesPage struct {
	layout
	Endpoints []webhook.Endpoint
	Events    []string
	States    []webhook.DeliveryState
	State     string
	Event     string
	Endpoint  string
	// DeletedEndpoint: Endpoint is one of the merchant's deleted
	// endpoints, which the list of endpoints no longer has.
	DeletedEndpoint bool
	Show            string // "" (every delivery) or showResendable
	Fields          map[string]string
	DeliveryList    deliveryList
	NextURL         string
	NewestURL       string // the first page of the same filter, from a later one
}

// showResendable is the history's filter of what a person can re-send
// (webhook.DeliveryFilter.Resendable): the overview's undelivered alert
// links to it, so its count and the list agree.
const showResendable = "resendable"

// handleDeliveries is the delivery history, filtered by state, event and
// endpoint, newest first, one page at a time.
func (d *Dashboard) handleDeliveries() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		merchant := sessionOf(r).MerchantID
		q := r.URL.Query()
		list, err := d.webhooks.Endpoints(r.Context(), merchant)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		p := &deliveriesPage{layout: layout{Title: "wh.history.title", Nav: "webhooks"}, Endpoints: list, Events: webhook.Events,
			States: []webhook.DeliveryState{webhook.StatePending, webhook.StateDelivered, webhook.StateUndelivered},
			State:  q.Get("state"), Event: q.Get("event"), Endpoint: q.Get("endpoint"), Show: q.Get("show")}
		p.DeliveryList = deliveryList{layout: &p.layout, Actions: true, Return: "/webhooks/deliveries?" + r.URL.RawQuery}
		p.Endpoint = strings.ToLower(p.Endpoint) // an id, read in any case
		if p.Endpoint != "" && !hasEndpoint(list, p.Endpoint) {
			// A deleted endpoint's history stays readable, filter
			// included; another merchant's endpoint is not found.
			if !d.deletedEndpoint(w, r, p.Endpoint) {
				return
			}
			p.DeletedEndpoint = true
		}
		f := webhook.DeliveryFilter{State: webhook.DeliveryState(p.State), Event: p.Event, EndpointID: p.Endpoint,
			Resendable: p.Show == showResendable, After: q.Get("after")}
		page, err := d.webhooks.History(r.Context(), merchant, f)
		if e, ok := refusal(err); ok || p.Show != "" && p.Show != showResendable {
			if ok {
				p.Fields = filterProblems(e.Fields)
			} else {
				p.Fields = map[string]string{}
			}
			if p.Show != "" && p.Show != showResendable {
				p.Fields["show"] = "wh.filter.bad"
			}
			d.render(w, r, http.StatusBadRequest, "deliveries", p)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		p.DeliveryList.Deliveries = page.Deliveries
		filter := url.Values{}
		for k, v := range map[string]string{"state": p.State, "event": p.Event, "endpoint": p.Endpoint, "show": p.Show} {
			if v != "" {
				filter.Set(k, v)
			}
		}
		if f.After != "" {
			p.NewestURL = "/webhooks/deliveries?" + filter.Encode()
		}
		if page.Next != "" {
			filter.Set("after", page.Next)
			p.NextURL = "/webhooks/deliveries?" + filter.Encode()
		}
		d.render(w, r, http.StatusOK, "deliveries", p)
	})
}

// handleResend makes one manual attempt of a delivery and comes back to
// the page it was asked from, saying what the receiver answered.
func (d *Dashboard) handleResend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		id := r.PathValue("id")
		back := r.PostForm.Get("return")
		if !localPath(back) {
			back = "/webhooks/deliveries"
		}
		a, err := d.webhooks.Resend(r.Context(), sessionOf(r).MerchantID, id)
		if key, ok := resendProblem(err); ok {
			d.redirectWithFlash(w, r, back, key, "")
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionDeliveryResent, id)
		if a.Succeeded {
			d.redirectWithFlash(w, r, back, "wh.resend.ok", strconv.Itoa(a.StatusCode))
			return
		}
		answer := a.Error
		if a.StatusCode != 0 {
			answer = "HTTP " + strconv.Itoa(a.StatusCode)
		}
		d.redirectWithFlash(w, r, back, "wh.resend.failed", answer)
	})
}

// handleResendSince queues every undelivered delivery since a time (in
// N'Djamena time, as the page shows times), optionally of one endpoint.
func (d *Dashboard) handleResendSince() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		since, err := time.ParseInLocation(localMinute, r.PostForm.Get("since"), ndjamena)
		if err != nil {
			p, err := d.webhooksPage(r)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			p.Fields = map[string]string{"since": "wh.since.bad"}
			d.render(w, r, http.StatusUnprocessableEntity, "webhooks", p)
			return
		}
		endpoint := strings.ToLower(r.PostForm.Get("endpoint")) // an id, read in any case
		if endpoint != "" {
			r.SetPathValue("id", endpoint)
			if e, err := d.findEndpoint(r); err != nil || e == nil {
				if err == nil {
					err = errNotFound
				}
				d.fail(w, r, err)
				return
			}
		}
		res, err := d.webhooks.ResendUndelivered(r.Context(), sessionOf(r).MerchantID, since, endpoint)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		target := "since " + since.UTC().Format(time.RFC3339)
		if endpoint != "" {
			target += ", endpoint " + endpoint
		}
		d.Audit(r.Context(), team.ActionResentSince, target+": "+strconv.Itoa(res.Queued)+" queued")
		// One and none have their own words (French says "aucun envoi",
		// not "0 envois"); none takes no argument.
		flash, arg := "wh.since.queued", strconv.Itoa(res.Queued)
		switch {
		case res.More:
			flash = "wh.since.more"
		case res.Disabled > 0 && res.Queued == 0:
			flash, arg = "wh.since.disabled.zero", ""
		case res.Disabled > 0 && res.Queued == 1:
			flash = "wh.since.disabled.one"
		case res.Disabled > 0:
			// Not silently: the overview counts them as needing attention.
			flash = "wh.since.disabled"
		case res.Queued == 0:
			flash, arg = "wh.since.queued.zero", ""
		case res.Queued == 1:
			flash = "wh.since.queued.one"
		}
		d.redirectWithFlash(w, r, "/webhooks/deliveries", flash, arg)
	})
}

func hasEndpoint(list []webhook.Endpoint, id string) bool {
	for _, e := range list {
		if e.ID == id {
			return true
		}
	}
	return false
}
