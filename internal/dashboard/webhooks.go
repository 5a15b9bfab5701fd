package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/webhook"
)

// Webhooks manages a merchant's endpoints and reads and re-sends their
// deliveries. Every method is scoped to merchantID: another merchant's
// endpoint or delivery is a not-found *payment.Error.
type Webhooks interface {
	Endpoints(ctx context.Context, merchantID string) ([]webhook.Endpoint, error)
	// CreateEndpointOnce and RotateSecret return the secret, which exists
	// nowhere else the merchant can read it. request names the change
	// (the form's token): sent again, it changes nothing and answers the
	// endpoint without a secret and webhook.ErrEndpointAdded or
	// webhook.ErrRotationDone.
	CreateEndpointOnce(ctx context.Context, merchantID, url, request string) (*webhook.Endpoint, error)
	RotateSecret(ctx context.Context, merchantID, endpointID, request string) (*webhook.Endpoint, error)
	// SetEndpointEnabled reports whether this call changed the endpoint.
	SetEndpointEnabled(ctx context.Context, merchantID, endpointID string, enabled bool) (bool, error)
	DeleteEndpoint(ctx context.Context, merchantID, endpointID string) error
	EndpointDeleted(ctx context.Context, merchantID, endpointID string) (bool, error)
	Test(ctx context.Context, merchantID, endpointID string) (*webhook.TestResult, error)
	// Delivery reads one delivery back, the test event's among them.
	Delivery(ctx context.Context, merchantID, deliveryID string) (*webhook.Delivery, error)
	History(ctx context.Context, merchantID string, f webhook.DeliveryFilter) (*webhook.DeliveryPage, error)
	Resend(ctx context.Context, merchantID, deliveryID string) (*webhook.DeliveryAttempt, error)
	ResendUndelivered(ctx context.Context, merchantID string, since time.Time, endpointID string) (*webhook.BulkResend, error)
}

type webhooksPage struct {
	layout
	Endpoints []webhook.Endpoint
	// The add form, refilled after a refusal; Fields holds a catalogue key
	// for each field in error, of this form or the bulk re-send's.
	URL    string
	Fields map[string]string
	// Test is the answer of the test event just sent, read back from the
	// history; TestURL is the endpoint it went to.
	Test    *webhook.TestResult
	TestURL string
	// Since pre-fills the bulk re-send with the start of yesterday.
	Since string
	// Request is the add and rotate forms' token, new on each showing of
	// the page: a form sent again (a reload of the new secret's page)
	// changes nothing.
	Request string
}

// secretPage shows an endpoint's secret, in the answer to the POST that
// made it and never again.
type secretPage struct {
	layout
	Endpoint webhook.Endpoint
	Rotated  bool
	// Recent says the rotation came within webhook.RecentRotation of the
	// one before: it replaced that one's secret, and the secret before it
	// keeps its own grace (webhook.RotateSecret).
	Recent bool
}

type endpointDeletePage struct {
	layout
	Endpoint webhook.Endpoint
	// Deleted: the endpoint is the merchant's, and deleted already (the
	// page is shown again by the back button after deleting it).
	Deleted bool
}

func (d *Dashboard) webhooksPage(r *http.Request) (*webhooksPage, error) {
	list, err := d.webhooks.Endpoints(r.Context(), sessionOf(r).MerchantID)
	if err != nil {
		return nil, err
	}
	y := d.now().In(ndjamena).AddDate(0, 0, -1)
	since := time.Date(y.Year(), y.Month(), y.Day(), 0, 0, 0, 0, ndjamena)
	return &webhooksPage{layout: layout{Title: "wh.title", Nav: "webhooks"}, Endpoints: list,
		Since: since.Format(localMinute), Request: rand.Text()}, nil
}

// localMinute is the form of an <input type="datetime-local">.
const localMinute = "2006-01-02T15:04"

// handleWebhooks is the endpoints' page; ?test=ID shows the answer of the
// test event of that delivery id (where sending one leads).
func (d *Dashboard) handleWebhooks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := d.webhooksPage(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if id := r.URL.Query().Get("test"); id != "" {
			if p.Test, p.TestURL, err = d.testResult(r, id); err != nil {
				d.fail(w, r, err)
				return
			}
		}
		d.render(w, r, http.StatusOK, "webhooks", p)
	})
}

// testResult reads back the answer of the test event whose delivery id is
// id, and the URL it went to; nil when id is not one of the merchant's
// test deliveries (another merchant's is not found, as anything else).
func (d *Dashboard) testResult(r *http.Request, id string) (*webhook.TestResult, string, error) {
	dl, err := d.webhooks.Delivery(r.Context(), sessionOf(r).MerchantID, id)
	if isNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if !dl.Test || len(dl.Attempts) == 0 {
		return nil, "", nil
	}
	return &webhook.TestResult{DeliveryID: dl.ID, DeliveryAttempt: dl.Attempts[len(dl.Attempts)-1]}, dl.URL, nil
}

// handleEndpointAdd registers an endpoint and shows its secret once, in
// this answer (sent with Cache-Control: no-store). The same form sent
// again (a reload of that answer) adds nothing and says so (409).
func (d *Dashboard) handleEndpointAdd() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		raw := strings.TrimSpace(r.PostForm.Get("url"))
		e, err := d.webhooks.CreateEndpointOnce(r.Context(), sessionOf(r).MerchantID, raw, formTokenOf(r))
		if errors.Is(err, webhook.ErrEndpointAdded) {
			d.render(w, r, http.StatusConflict, "webhook_secret", &secretPage{layout: layout{Title: "wh.added.title", Nav: "webhooks"}, Endpoint: *e})
			return
		}
		if key, ok := urlProblem(err); ok {
			p, err := d.webhooksPage(r)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			p.URL, p.Fields = raw, map[string]string{"url": key}
			d.render(w, r, http.StatusUnprocessableEntity, "webhooks", p)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionEndpointAdded, e.URL+" ("+e.ID+")")
		d.render(w, r, http.StatusCreated, "webhook_secret", &secretPage{layout: layout{Title: "wh.secret.title", Nav: "webhooks"}, Endpoint: *e})
	})
}

// handleEndpointRotate gives an endpoint a new secret, shown once; the old
// one keeps signing for 24 hours. The same form sent again (a reload of
// that answer) rotates nothing and says so (409): a second rotation would
// end at once the secret the merchant's server still verifies with.
func (d *Dashboard) handleEndpointRotate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		e, err := d.webhooks.RotateSecret(r.Context(), sessionOf(r).MerchantID, r.PathValue("id"), formTokenOf(r))
		page := &secretPage{layout: layout{Title: "wh.secret.title", Nav: "webhooks"}, Rotated: true}
		if errors.Is(err, webhook.ErrRotationDone) {
			page.Title, page.Endpoint = "wh.again.title", *e
			d.render(w, r, http.StatusConflict, "webhook_secret", page)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		page.Endpoint = *e
		page.Recent = e.ReplacedRecent
		d.Audit(r.Context(), team.ActionEndpointRotated, e.URL+" ("+e.ID+")")
		d.render(w, r, http.StatusOK, "webhook_secret", page)
	})
}

// handleEndpointSwitch enables or disables an endpoint.
func (d *Dashboard) handleEndpointSwitch(enable bool) http.Handler {
	action, flash := team.ActionEndpointDisabled, "wh.disabled.flash"
	if enable {
		action, flash = team.ActionEndpointEnabled, "wh.enabled.flash"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		changed, err := d.webhooks.SetEndpointEnabled(r.Context(), sessionOf(r).MerchantID, id, enable)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if changed {
			// Only a change is recorded: enabling an enabled endpoint
			// (a second click, another tab) logged it again.
			d.Audit(r.Context(), action, id)
		}
		d.redirectWithFlash(w, r, "/webhooks", flash, "")
	})
}

// findEndpoint returns the merchant's endpoint named in the path, or nil.
func (d *Dashboard) findEndpoint(r *http.Request) (*webhook.Endpoint, error) {
	list, err := d.webhooks.Endpoints(r.Context(), sessionOf(r).MerchantID)
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.ID == r.PathValue("id") {
			return &e, nil
		}
	}
	return nil, nil
}

func (d *Dashboard) handleEndpointDeleteConfirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := d.findEndpoint(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if e == nil {
			d.endpointGone(w, r)
			return
		}
		d.render(w, r, http.StatusOK, "webhook_delete", &endpointDeletePage{layout: layout{Title: "wh.delete.title", Nav: "webhooks"}, Endpoint: *e})
	})
}

func (d *Dashboard) handleEndpointDelete() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := d.findEndpoint(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if e == nil {
			d.endpointGone(w, r) // deleted already (a second click) says so
			return
		}
		err = d.webhooks.DeleteEndpoint(r.Context(), sessionOf(r).MerchantID, e.ID)
		if isNotFound(err) {
			d.endpointGone(w, r) // another person's delete won the race
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionEndpointDeleted, e.URL+" ("+e.ID+")")
		d.redirectWithFlash(w, r, "/webhooks", "wh.deleted.flash", "")
	})
}

// deletedEndpoint reports whether id is one of the session's merchant's
// deleted endpoints. When it is not, it has answered: 404 (any other id,
// another merchant's included), or the database's error.
func (d *Dashboard) deletedEndpoint(w http.ResponseWriter, r *http.Request, id string) bool {
	deleted, err := d.webhooks.EndpointDeleted(r.Context(), sessionOf(r).MerchantID, id)
	if err != nil {
		d.fail(w, r, err)
		return false
	}
	if !deleted {
		d.notFound(w, r)
	}
	return deleted
}

// endpointGone answers the delete confirmation of an endpoint that is not
// listed: the merchant's own, deleted already (the back button after
// deleting it), says so; any other id is not found.
func (d *Dashboard) endpointGone(w http.ResponseWriter, r *http.Request) {
	if !d.deletedEndpoint(w, r, r.PathValue("id")) {
		return
	}
	d.render(w, r, http.StatusOK, "webhook_delete", &endpointDeletePage{layout: layout{Title: "wh.gone.title", Nav: "webhooks"}, Deleted: true})
}

// handleEndpointTest sends the test event, then leads to the webhooks page
// showing its answer, read back from the history (post/redirect/get): a
// reload of that page shows the answer again and sends nothing.
func (d *Dashboard) handleEndpointTest() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := d.webhooks.Test(r.Context(), sessionOf(r).MerchantID, r.PathValue("id"))
		if errors.Is(err, webhook.ErrManualBusy) {
			d.redirectWithFlash(w, r, "/webhooks", "wh.manual.busy", "")
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/webhooks?"+url.Values{"test": {res.DeliveryID}}.Encode(), http.StatusSeeOther)
	})
}

// errNotFound is the dashboard's not-found for an id that is not this
// merchant's.
var errNotFound = &payment.Error{Code: payment.ENOTFOUND, Message: "not found"}

// FlashText is the flash message with its argument, when it has one (the
// answer of a re-send, a number of deliveries queued).
func (l *layout) FlashText() string {
	if l.FlashArg == "" {
		return l.T(l.Flash)
	}
	return l.T(l.Flash, l.FlashArg)
}

func init() {
	addMessages(map[string]string{
		"wh.title":                  "Webhooks",
		"wh.intro":                  "Your endpoints receive a signed POST when a payment succeeds, fails or times out.",
		"wh.url":                    "URL",
		"wh.add":                    "Add endpoint",
		"wh.add.help":               "In live mode only public https URLs are accepted.",
		"wh.enabled":                "Enabled",
		"wh.disabledstate":          "Disabled",
		"wh.enable":                 "Enable",
		"wh.disable":                "Disable",
		"wh.delete":                 "Delete",
		"wh.rotate":                 "Rotate secret",
		"wh.test":                   "Send test event",
		"wh.oldsecret":              "Previous secret valid until",
		"wh.history":                "Delivery history",
		"wh.history.title":          "Webhook deliveries",
		"wh.secret.title":           "Signing secret",
		"wh.secret.warning":         "Copy this secret now: it will not be shown again. Your endpoint uses it to verify each delivery.",
		"wh.secret.rotated":         "The previous secret stays valid for 24 hours: until then every delivery carries a webhook-signature for each secret. X-Service-Signature, which holds one, is made with the new secret from now on.",
		"wh.secret.rotated.recent":  "The secret made by the rotation a few minutes ago is replaced at once, as it can hardly be in use yet. The one before it, which your endpoint verifies with, keeps its validity (below): until then every delivery carries a webhook-signature for it and for the new secret. X-Service-Signature, which holds one, is made with the new secret from now on.",
		"wh.secret.done":            "Done",
		"wh.again.title":            "This secret was already rotated",
		"wh.added.title":            "This endpoint was already added",
		"wh.added.body":             "The form was sent again (the page was reloaded), so no second endpoint was added. Its secret was shown the first time, once. If you did not copy it, rotate the secret on the Webhooks page.",
		"wh.again.body":             "The form was sent again (the page was reloaded), so the secret was not rotated a second time. The new secret was shown the first time, once. If you did not copy it, rotate again: within 10 minutes of this rotation, that replaces only the secret you did not copy, and the secret used before keeps its validity; later, it ends at once the secret used before this rotation.",
		"wh.delete.title":           "Delete endpoint",
		"wh.gone.title":             "This endpoint is already deleted",
		"wh.gone.body":              "It receives no more events. Its delivery history stays readable.",
		"wh.gone.back":              "Back to the webhooks",
		"wh.delete.confirm":         "Delete this endpoint? It will receive no more events. Its delivery history stays readable.",
		"wh.deleted.flash":          "The endpoint was deleted.",
		"wh.enabled.flash":          "The endpoint was enabled.",
		"wh.disabled.flash":         "The endpoint was disabled.",
		"wh.test.title":             "Test event answer",
		"wh.test.ok":                "Delivered: the endpoint answered HTTP %d in %d ms.",
		"wh.test.failed":            "Not delivered.",
		"wh.answer":                 "Answer",
		"wh.latency":                "Latency",
		"wh.excerpt":                "Response or error",
		"wh.attempts":               "%d attempts",
		"wh.attempt.one":            "1 attempt",
		"wh.queued":                 "queued for re-send",
		"wh.next":                   "next attempt",
		"wh.manual":                 "manual",
		"wh.inprogress":             "In progress",
		"wh.noanswer":               "No answer",
		"wh.noattempt":              "Not attempted yet.",
		"wh.delivery.id":            "Delivery",
		"wh.delivery.tx":            "transaction",
		"wh.resend":                 "Re-send now",
		"wh.resend.ok":              "Re-sent: the endpoint answered HTTP %s.",
		"wh.resend.failed":          "Re-sent, but not delivered: %s.",
		"wh.resend.test":            "Not re-sent: a test event is sent once. Send a new test event instead.",
		"wh.resend.delivered":       "Not re-sent: this delivery was delivered already.",
		"wh.resend.deleted":         "Not re-sent: the endpoint of this delivery was deleted.",
		"wh.resend.busy":            "Not re-sent: this delivery is being attempted right now. Look at its history in a few seconds.",
		"wh.manual.busy":            "Not sent: two test events or re-sends to this endpoint are already waiting for its answer (up to 10 seconds). Try again when they end.",
		"wh.resend.refused":         "Not re-sent.",
		"wh.since":                  "Re-send every undelivered delivery since",
		"wh.since.from":             "Undelivered since",
		"wh.since.help":             "N'Djamena time. Deliveries still being retried are left to their schedule.",
		"wh.since.endpoint":         "Endpoint",
		"wh.since.all":              "All endpoints",
		"wh.since.submit":           "Re-send undelivered",
		"wh.since.bad":              "Enter a date and time.",
		"wh.since.queued":           "%s deliveries queued for re-sending.",
		"wh.since.queued.one":       "%s delivery queued for re-sending.",
		"wh.since.queued.zero":      "0 deliveries queued for re-sending.",
		"wh.since.more":             "%s deliveries queued; more remain: ask again once these are sent.",
		"wh.since.disabled":         "%s deliveries queued. Those of disabled endpoints were left out: enable the endpoint, then re-send.",
		"wh.since.disabled.one":     "%s delivery queued. Those of disabled endpoints were left out: enable the endpoint, then re-send.",
		"wh.since.disabled.zero":    "0 deliveries queued. Those of disabled endpoints were left out: enable the endpoint, then re-send.",
		"wh.state.pending":          "Pending",
		"wh.state.delivered":        "Delivered",
		"wh.state.undelivered":      "Undelivered",
		"wh.filter.state":           "State",
		"wh.filter.event":           "Event",
		"wh.filter.endpoint":        "Endpoint",
		"wh.filter.deleted":         "A deleted endpoint",
		"wh.filter.any":             "Any",
		"wh.filter.show":            "Show",
		"wh.filter.show.all":        "Every delivery",
		"wh.filter.show.resendable": "Only what can be re-sent (no test event, no deleted endpoint)",
		"wh.filter.apply":           "Apply",
		"wh.none":                   "No delivery matches.",
		"wh.older":                  "Older",
		"wh.newest":                 "Newest",
	}, map[string]string{
		"wh.title":                  "Webhooks",
		"wh.intro":                  "Vos points de réception reçoivent un POST signé quand un paiement réussit, échoue ou dépasse le délai de réponse.",
		"wh.url":                    "URL",
		"wh.add":                    "Ajouter un point de réception",
		"wh.add.help":               "En mode réel, seules les URL https publiques sont acceptées.",
		"wh.enabled":                "Activé",
		"wh.disabledstate":          "Désactivé",
		"wh.enable":                 "Activer",
		"wh.disable":                "Désactiver",
		"wh.delete":                 "Supprimer",
		"wh.rotate":                 "Changer le secret",
		"wh.test":                   "Envoyer un événement de test",
		"wh.oldsecret":              "Ancien secret valable jusqu'au",
		"wh.history":                "Historique des envois",
		"wh.history.title":          "Envois de webhooks",
		"wh.secret.title":           "Secret de signature",
		"wh.secret.warning":         "Copiez ce secret maintenant : il ne sera plus affiché. Votre point de réception s'en sert pour vérifier chaque envoi.",
		"wh.secret.rotated":         "L'ancien secret reste valable 24 heures : d'ici là, chaque envoi porte une webhook-signature pour chacun des deux secrets. X-Service-Signature, qui n'en porte qu'une, est faite avec le nouveau secret dès maintenant.",
		"wh.secret.rotated.recent":  "Le secret créé par le changement d'il y a quelques minutes est remplacé aussitôt, car il ne peut guère être déjà utilisé. Celui d'avant, avec lequel votre point de réception vérifie les envois, reste valable comme prévu (ci-dessous) : d'ici là, chaque envoi porte une webhook-signature pour lui et pour le nouveau secret. X-Service-Signature, qui n'en porte qu'une, est faite avec le nouveau secret dès maintenant.",
		"wh.secret.done":            "Terminé",
		"wh.again.title":            "Ce secret a déjà été changé",
		"wh.added.title":            "Ce point de réception a déjà été ajouté",
		"wh.added.body":             "Le formulaire a été renvoyé (la page a été rechargée) : aucun second point de réception n'a été ajouté. Son secret a été affiché la première fois, une seule fois. Si vous ne l'avez pas copié, changez le secret sur la page Webhooks.",
		"wh.again.body":             "Le formulaire a été renvoyé (la page a été rechargée) : le secret n'a pas été changé une seconde fois. Le nouveau secret a été affiché la première fois, une seule fois. Si vous ne l'avez pas copié, changez-le à nouveau : dans les 10 minutes qui suivent ce changement, seul le secret que vous n'avez pas copié est remplacé, et le secret utilisé avant reste valable comme prévu ; plus tard, le secret utilisé avant ce changement cesserait aussitôt d'être valable.",
		"wh.delete.title":           "Supprimer le point de réception",
		"wh.gone.title":             "Ce point de réception est déjà supprimé",
		"wh.gone.body":              "Il ne reçoit plus d'événements. Son historique reste consultable.",
		"wh.gone.back":              "Retour aux webhooks",
		"wh.delete.confirm":         "Supprimer ce point de réception ? Il ne recevra plus d'événements. Son historique reste consultable.",
		"wh.deleted.flash":          "Le point de réception a été supprimé.",
		"wh.enabled.flash":          "Le point de réception a été activé.",
		"wh.disabled.flash":         "Le point de réception a été désactivé.",
		"wh.test.title":             "Réponse à l'événement de test",
		"wh.test.ok":                "Livré : le point de réception a répondu HTTP %d en %d ms.",
		"wh.test.failed":            "Non livré.",
		"wh.answer":                 "Statut HTTP",
		"wh.latency":                "Latence",
		"wh.excerpt":                "Réponse ou erreur",
		"wh.attempts":               "%d tentatives",
		"wh.attempt.one":            "1 tentative",
		"wh.queued":                 "en attente de renvoi",
		"wh.next":                   "prochaine tentative",
		"wh.manual":                 "manuelle",
		"wh.inprogress":             "En cours",
		"wh.noanswer":               "Pas de réponse",
		"wh.noattempt":              "Aucune tentative pour l'instant.",
		"wh.delivery.id":            "Identifiant de l'envoi",
		"wh.delivery.tx":            "transaction",
		"wh.resend":                 "Renvoyer maintenant",
		"wh.resend.ok":              "Renvoyé : le point de réception a répondu HTTP %s.",
		"wh.resend.failed":          "Renvoyé, mais non livré : %s.",
		"wh.resend.test":            "Non renvoyé : un événement de test n'est envoyé qu'une fois. Envoyez plutôt un nouvel événement de test.",
		"wh.resend.delivered":       "Non renvoyé : cet envoi a déjà été livré.",
		"wh.resend.deleted":         "Non renvoyé : le point de réception de cet envoi a été supprimé.",
		"wh.resend.busy":            "Non renvoyé : une tentative de cet envoi est en cours. Consultez son historique dans quelques secondes.",
		"wh.manual.busy":            "Non envoyé : deux envois de test ou renvois vers ce point de réception attendent déjà sa réponse (jusqu'à 10 secondes). Réessayez quand ils seront terminés.",
		"wh.resend.refused":         "Non renvoyé.",
		"wh.since":                  "Renvoyer tous les envois non livrés depuis",
		"wh.since.from":             "Non livrés depuis",
		"wh.since.help":             "Heure de N'Djamena. Les envois encore en cours de nouvelles tentatives gardent leur calendrier.",
		"wh.since.endpoint":         "Point de réception",
		"wh.since.all":              "Tous",
		"wh.since.submit":           "Renvoyer les non livrés",
		"wh.since.bad":              "Saisissez une date et une heure.",
		"wh.since.queued":           "%s envois mis en file d'attente pour être renvoyés.",
		"wh.since.queued.one":       "%s envoi mis en file d'attente pour être renvoyé.",
		"wh.since.queued.zero":      "Aucun envoi mis en file d'attente pour être renvoyé.",
		"wh.since.more":             "%s envois mis en file ; il en reste : redemandez une fois ceux-ci envoyés.",
		"wh.since.disabled":         "%s envois mis en file. Ceux des points de réception désactivés ont été laissés de côté : activez le point de réception, puis renvoyez.",
		"wh.since.disabled.one":     "%s envoi mis en file. Ceux des points de réception désactivés ont été laissés de côté : activez le point de réception, puis renvoyez.",
		"wh.since.disabled.zero":    "Aucun envoi mis en file. Ceux des points de réception désactivés ont été laissés de côté : activez le point de réception, puis renvoyez.",
		"wh.state.pending":          "En cours",
		"wh.state.delivered":        "Livré",
		"wh.state.undelivered":      "Non livré",
		"wh.filter.state":           "État",
		"wh.filter.event":           "Événement",
		"wh.filter.endpoint":        "Point de réception",
		"wh.filter.deleted":         "Un point de réception supprimé",
		"wh.filter.any":             "Tous",
		"wh.filter.show":            "Afficher",
		"wh.filter.show.all":        "Tous les envois",
		"wh.filter.show.resendable": "Seulement ce qui peut être renvoyé (ni test, ni point de réception supprimé)",
		"wh.filter.apply":           "Appliquer",
		"wh.none":                   "Aucun envoi ne correspond.",
		"wh.older":                  "Plus anciens",
		"wh.newest":                 "Plus récents",
	})
}
