package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/team"
)

// Config carries the dashboard's collaborators; internal/app wires them.
type Config struct {
	Accounts Accounts
	Sessions Sessions
	AuditLog AuditLog
	Keys     Keys
	Team     Team
	Figures  Figures
	// The transaction, webhook, reconciliation and sandbox phone pages.
	Payments Payments
	Records  TransactionRecords
	Webhooks Webhooks
	Cases    Cases
	Refunds  Refunds
	Phone    Phone
	// Secret signs session tokens: at least MinSecretBytes.
	Secret []byte
	// Sandbox shows the sandbox banner and the sandbox-only pages.
	Sandbox bool
	Now     func() time.Time
	Logger  *slog.Logger
	// NoteMerchant, when set, names the signed-in merchant in the
	// request's log line (api.NoteMerchant).
	NoteMerchant func(ctx context.Context, merchantID string)
	// Throttles makes the sign-in throttles; nil counts them in this
	// process alone (api.LocalThrottles).
	Throttles api.Throttles
}

// Dashboard is the merchants' web interface: sign-in and the pages.
type Dashboard struct {
	accounts     Accounts
	sessions     Sessions
	auditLog     AuditLog
	keys         Keys
	team         Team
	figures      Figures
	payments     Payments
	records      TransactionRecords
	webhooks     Webhooks
	cases        Cases
	refunds      Refunds
	phone        Phone
	secret       []byte
	sandbox      bool
	now          func() time.Time
	log          *slog.Logger
	noteMerchant func(ctx context.Context, merchantID string)

	pages  *renderer
	assets *assets
	// byAccount and byAddress throttle sign-in attempts per account (its
	// email, or email and trusted device) and per client address
	// (api.ClientKey): each attempt spends a token before its password is
	// compared, and one that succeeds gives it back.
	byAccount api.Throttle
	byAddress api.Throttle
	// signInLines lets one sign-in per client address compare its
	// password at a time (lines.go), and deviceLines one sign-in with a
	// device cookie per account.
	signInLines, deviceLines lines
	csrf                     *http.CrossOriginProtection
}

// The sign-in throttles' budgets: per account 10 tries, then one every
// 30 s; per client address 30, then one every 3 s.
var (
	accountTries = api.RateLimit{PerSecond: 1.0 / 30, Burst: 10}
	addressTries = api.RateLimit{PerSecond: 1.0 / 3, Burst: 30}
)

// New parses every template and checks the configuration.
func New(cfg Config) (*Dashboard, error) {
	if len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("the session secret must be at least %d bytes", MinSecretBytes)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Throttles == nil {
		cfg.Throttles = api.LocalThrottles
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	r, err := newRenderer(a)
	if err != nil {
		return nil, err
	}
	d := &Dashboard{
		accounts: cfg.Accounts, sessions: cfg.Sessions, auditLog: cfg.AuditLog, keys: cfg.Keys, team: cfg.Team,
		figures: cfg.Figures, payments: cfg.Payments, records: cfg.Records, webhooks: cfg.Webhooks, cases: cfg.Cases, refunds: cfg.Refunds, phone: cfg.Phone, secret: cfg.Secret, sandbox: cfg.Sandbox, now: cfg.Now, log: cfg.Logger,
		noteMerchant: cfg.NoteMerchant, pages: r, assets: a,
		byAccount: cfg.Throttles("signin-account", accountTries),
		byAddress: cfg.Throttles("signin-address", addressTries),
		csrf:      http.NewCrossOriginProtection(),
	}
	d.csrf.SetDenyHandler(http.HandlerFunc(d.crossOrigin))
	return d, nil
}

// Register adds every dashboard route to mux, the service's one mux,
// whose middleware gives each request its id, log line and recovery.
//
// Every route of the dashboard is listed here, with the permission it
// needs: signedIn admits any signed-in user, need(p) only roles granting
// p. Each handler is wrapped in secure (headers and CSRF refusal). Each
// path also answers the usual methods none of its routes takes with 405
// and an Allow header, rather than falling through to the service's 404.
func (d *Dashboard) Register(mux *http.ServeMux) {
	var paths []string
	methods := map[string][]string{}
	register := func(pattern string, h http.Handler) {
		method, path, _ := strings.Cut(pattern, " ")
		if methods[path] == nil {
			paths = append(paths, path)
		}
		methods[path] = append(methods[path], method)
		mux.Handle(pattern, d.secure(lowerID(h)))
	}
	// handle registers a page, within the API's budget for the database
	// (api.WithBudget): one that waited that long is answered 503 before
	// the server's write timeout cuts its connection. stream registers a
	// download that may run longer, extending its own write deadline.
	handle := func(pattern string, h http.Handler) { register(pattern, budgeted(h)) }
	stream := register

	handle("GET /static/{file}", d.assets.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.notFound(w, d.withSessionIfAny(w, r))
	})))
	handle("GET /login", d.handleLoginPage())
	handle("POST /auth/login", d.handleLogin())
	handle("POST /auth/logout", d.handleLogout())

	handle("GET /{$}", d.need(team.Read, d.handleOverview()))

	handle("GET /keys", d.need(team.Read, d.handleKeys()))
	handle("POST /keys", d.need(team.ManageKeys, d.handleKeyCreate()))
	handle("GET /keys/{id}/revoke", d.need(team.ManageKeys, d.handleKeyRevokeConfirm()))
	handle("POST /keys/{id}/revoke", d.need(team.ManageKeys, d.handleKeyRevoke()))

	handle("GET /transactions", d.need(team.Read, d.handleTransactions()))
	stream("GET /transactions/export.csv", d.need(team.Read, d.handleExport()))
	handle("GET /transactions/{id}", d.need(team.Read, d.handleTransaction()))

	handle("GET /webhooks", d.need(team.Read, d.handleWebhooks()))
	handle("POST /webhooks", d.need(team.ManageHooks, d.handleEndpointAdd()))
	handle("POST /webhooks/{id}/enable", d.need(team.ManageHooks, d.handleEndpointSwitch(true)))
	handle("POST /webhooks/{id}/disable", d.need(team.ManageHooks, d.handleEndpointSwitch(false)))
	handle("POST /webhooks/{id}/rotate", d.need(team.ManageHooks, d.handleEndpointRotate()))
	handle("POST /webhooks/{id}/test", d.need(team.ManageHooks, d.handleEndpointTest()))
	handle("GET /webhooks/{id}/delete", d.need(team.ManageHooks, d.handleEndpointDeleteConfirm()))
	handle("POST /webhooks/{id}/delete", d.need(team.ManageHooks, d.handleEndpointDelete()))
	handle("GET /webhooks/deliveries", d.need(team.Read, d.handleDeliveries()))
	handle("POST /webhooks/deliveries/{id}/resend", d.need(team.ManageHooks, d.handleResend()))
	handle("POST /webhooks/resend-undelivered", d.need(team.ManageHooks, d.handleResendSince()))

	handle("GET /reconciliation", d.need(team.Read, d.handleReconciliation()))
	handle("POST /reconciliation/{id}/resolve", d.need(team.ManagePayment, d.handleCaseResolve()))

	handle("GET /phone", d.need(team.ManagePayment, d.handlePhone()))
	handle("POST /phone/{id}/answer", d.need(team.ManagePayment, d.handlePhoneAnswer()))

	handle("GET /team", d.need(team.ManageTeam, d.handleTeam()))
	handle("POST /team", d.need(team.ManageTeam, d.handleUserAdd()))
	handle("POST /team/{id}/role", d.need(team.ManageTeam, d.handleUserRole()))
	handle("GET /team/{id}/remove", d.need(team.ManageTeam, d.handleUserRemoveConfirm()))
	handle("POST /team/{id}/remove", d.need(team.ManageTeam, d.handleUserRemove()))

	handle("GET /audit", d.need(team.ReadAudit, d.handleAudit()))

	handle("GET /account", d.signedIn(d.handleAccount()))
	handle("POST /account/password", d.signedIn(d.handlePassword()))
	handle("POST /account/language", d.signedIn(d.handleLanguage()))

	// One pattern per refused method, not a method-less one per path: a
	// method-less "/transactions/export.csv" would conflict with
	// "GET /transactions/{id}" in ServeMux.
	for _, path := range paths {
		allow := methods[path]
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead) // ServeMux serves HEAD from GET
		}
		refuse := d.secure(d.methodNotAllowed(strings.Join(allow, ", ")))
		for _, m := range refusedMethods {
			if !slices.Contains(allow, m) {
				mux.Handle(m+" "+path, refuse)
			}
		}
	}
}

// budgeted gives each request to h the API's budget for the database.
func budgeted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, cancel := api.WithBudget(r)
		defer cancel()
		h.ServeHTTP(w, r)
	})
}

// refusedMethods are the methods a dashboard path not taking them answers
// with 405; others (rarely sent) fall through to the service's 404.
var refusedMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// contentSecurityPolicy allows scripts, styles and images from this
// origin only: no inline script, no inline style, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// strictTransport tells a browser that reached the dashboard over HTTPS
// to use nothing else for a year: the session cookie is Secure, so the
// dashboard is meant to be reached through a TLS proxy, and a first plain
// http:// visit (a typed address, an old link) could otherwise be
// redirected by whoever sits on the network. Browsers ignore the header on
// plain http, so a sandbox on http://localhost is unaffected. Subdomains
// are the operator's to decide, at their proxy.
const strictTransport = "max-age=31536000"

// secure sets the security headers of every dashboard response and
// refuses cross-origin unsafe requests (CSRF) with 403: the standard
// library's check of Sec-Fetch-Site and Origin, and, for a request that
// carries neither (an old browser's, or a tool's), a Referer naming
// another site. A request with none of the three is a tool's and passes,
// as the SameSite=Strict cookie is what a browser would not send.
func (d *Dashboard) secure(next http.Handler) http.Handler {
	protected := d.csrf.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Strict-Transport-Security", strictTransport)
		if crossSiteReferer(r) {
			d.crossOrigin(w, r) // a page too, with the headers above
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// lowerID reads a path's {id} in any case, as the API reads its ids: the
// ids are stored in lower case, and a copied id in capitals must find
// its key, endpoint, delivery or payment rather than a 404.
func lowerID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); id != "" {
			r.SetPathValue("id", strings.ToLower(id))
		}
		next.ServeHTTP(w, r)
	})
}

// crossSiteReferer reports an unsafe request whose only sign of where it
// comes from is a Referer of another host.
func crossSiteReferer(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	if r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != "" {
		return false // the standard library's check decides
	}
	ref := r.Header.Get("Referer")
	if ref == "" {
		return false
	}
	u, err := url.Parse(ref)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}

// Audit records an action of the signed-in user on target (an id, an
// email, a URL; never a secret) in the merchant's audit log. ctx is the
// request's context inside signedIn, which says who and from where.
// A failure to record is logged, and does not undo the action.
func (d *Dashboard) Audit(ctx context.Context, action, target string) {
	s, _ := ctx.Value(ctxSession).(*session)
	if s == nil {
		d.log.Error("audit outside a session", "action", action)
		return
	}
	d.audit(ctx, team.AuditEntry{MerchantID: s.MerchantID, UserID: s.User.ID, Email: s.User.Email,
		Action: action, Target: target, Address: s.Address, At: d.now()})
}

func (d *Dashboard) audit(ctx context.Context, e team.AuditEntry) {
	if err := d.auditLog.Append(context.WithoutCancel(ctx), e); err != nil {
		d.log.Error("audit log", "action", e.Action, "merchant_id", e.MerchantID, "err", err)
	}
}

// AuditLog appends to and reads the audit log.
type AuditLog interface {
	Append(ctx context.Context, e team.AuditEntry) error
	List(ctx context.Context, merchantID string, before time.Time, beforeID string, limit int) ([]team.AuditEntry, error)
}
