package dashboard

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Languages the dashboard speaks; English is the default.
const (
	english = "en"
	french  = "fr"
)

// langCookie remembers the choice made on the sign-in page, before there
// is a user to remember it for.
const langCookie = "momopay_lang"

// language chooses the page's language: the user's saved choice, then the
// sign-in page's cookie, then the browser's Accept-Language.
func language(r *http.Request, saved string) string {
	if saved == english || saved == french {
		return saved
	}
	if c, err := r.Cookie(langCookie); err == nil && (c.Value == english || c.Value == french) {
		return c.Value
	}
	return fromAcceptLanguage(r.Header.Get("Accept-Language"))
}

// fromAcceptLanguage picks French or English by the highest-weighted of
// the two in an Accept-Language header.
func fromAcceptLanguage(header string) string {
	best, bestQ := english, -1.0
	for part := range strings.SplitSeq(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if _, err := fmt.Sscanf(v, "%g", &q); err != nil {
				continue
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if (base == english || base == french) && q > bestQ {
			best, bestQ = base, q
		}
	}
	return best
}

// translate returns the text of key in lang, falling back to English and
// then to the key itself (which the test of the catalogue forbids).
func translate(lang, key string, args ...any) string {
	msg, ok := messages[lang][key]
	if !ok {
		msg, ok = messages[english][key]
	} else if lang == french {
		msg = frenchSpaces.Replace(msg)
	}
	if !ok {
		return key
	}
	if len(args) > 0 {
		return fmt.Sprintf(msg, args...)
	}
	return msg
}

// said maps the phrases the service itself writes in English into its
// records (timeline details, the refunds' requester, the audit log's who
// and address columns) to catalogue keys, so a page shows them in its
// language; the records keep the English, which the API and the CLI show.
var said = map[string]string{
	"no answer before expires_at": "said.expired",
	payment.AutoRefundRequester:   "said.autorefund",
	payment.AutoRefundActor.Name:  "said.autorefund.actor",
	"command line":                "said.cli",
	team.AutoRefundTarget:         "said.autorefund.target",
}

// cliActor starts the audit log's who column of a change made from the
// command line ("command line: amina@ops-1").
const cliActor = "command line: "

// SaidText is text the service wrote in English, in the page's language
// when it is one of the service's own phrases (said), else as written.
func (l *layout) SaidText(text string) string {
	if key, ok := said[text]; ok {
		return l.T(key)
	}
	if who, ok := strings.CutPrefix(text, cliActor); ok {
		return l.T("said.cli.who", who)
	}
	return text
}

// Said is SaidText for a page's body: text it cannot translate (an
// operator's message, a network error) is marked lang="en" on a French
// page, so that a screen reader reads it as English.
func (l *layout) Said(text string) template.HTML {
	out := l.SaidText(text)
	esc := template.HTMLEscapeString(out)
	if l.Lang == french && out == text && text != "" {
		return template.HTML(`<span lang="en">` + esc + `</span>`)
	}
	return template.HTML(esc)
}

// frenchSpaces gives French text its non-breaking spaces, so that a line
// never starts with its punctuation: a no-break space before a colon and
// inside guillemets, a narrow one before ; ? and !. The catalogue is
// written with plain spaces; the arguments (names, URLs) are left as they
// are.
var frenchSpaces = strings.NewReplacer(" :", "\u00a0:", " ;", "\u202f;", " ?", "\u202f?", " !", "\u202f!", "« ", "«\u00a0", " »", "\u00a0»")

// messages is the catalogue: every key in English and in French. A page
// adds its keys to both maps (a test checks that they match, and that
// every key a template uses is here).
var messages = map[string]map[string]string{
	english: {
		"app.name":                               "momopay",
		"lang.en":                                "English",
		"lang.fr":                                "Français",
		"lang.switch":                            "Language",
		"nav.overview":                           "Overview",
		"nav.transactions":                       "Transactions",
		"nav.keys":                               "API keys",
		"nav.webhooks":                           "Webhooks",
		"nav.reconciliation":                     "Reconciliation",
		"nav.phone":                              "Sandbox phone",
		"nav.team":                               "Team",
		"nav.audit":                              "Audit log",
		"nav.account":                            "Account",
		"nav.signout":                            "Sign out",
		"nav.menu":                               "Menu",
		"nav.skip":                               "Skip to content",
		"mode.sandbox":                           "Sandbox",
		"mode.sandbox.note":                      "Sandbox mode: payments are simulated, no money moves.",
		"role.owner":                             "Owner",
		"role.developer":                         "Developer",
		"role.viewer":                            "Viewer",
		"common.save":                            "Save",
		"common.cancel":                          "Cancel",
		"common.created":                         "Created",
		"common.none":                            "None yet.",
		"common.never":                           "Never",
		"common.actions":                         "Actions",
		"common.email":                           "Email",
		"common.role":                            "Role",
		"common.status":                          "Status",
		"common.operator":                        "Operator",
		"common.amount":                          "Amount",
		"common.reference":                       "Reference",
		"common.when":                            "When",
		"common.back":                            "Back",
		"common.newest":                          "Newest",
		"common.older":                           "Older",
		"common.copy":                            "Copy",
		"common.copied":                          "Copied",
		"common.you":                             "you",
		"common.labelled":                        "%s: %s", // a name and what it names, as in the chart's accessible name
		"error.title":                            "Something went wrong",
		"error.body":                             "An internal error occurred. If it happens again, quote this request id:",
		"unavailable.title":                      "Temporarily unavailable",
		"unavailable.body":                       "The service could not reach its database just now. Try again in a few seconds. If you were saving a change, check whether it was made before making it again.",
		"notfound.title":                         "Not found",
		"notfound.body":                          "This page does not exist, or it belongs to another account.",
		"badmethod.title":                        "Not available this way",
		"badmethod.body":                         "This address does not answer this kind of request. Go back and use the page's own links and buttons.",
		"forbidden.title":                        "Not allowed",
		"crossorigin.title":                      "Form refused",
		"crossorigin.body":                       "This form was sent from another site, so it was not acted on. Open the dashboard at its own address and try again. If you did, the proxy in front of momopay changes the address the browser asked for: it must pass the Host header on unchanged.",
		"forbidden.body":                         "Your role does not allow this action. Ask an owner of this account.",
		"form.fix":                               "Please correct the fields below.",
		"form.unreadable":                        "The form could not be read. Reload the page and try again.",
		"login.title":                            "Sign in",
		"login.heading":                          "Sign in to your dashboard",
		"login.email":                            "Email",
		"login.password":                         "Password",
		"login.submit":                           "Sign in",
		"login.failed":                           "Wrong email or password.",
		"login.throttled":                        "Too many attempts. Try again in %d seconds.",
		"login.throttled.one":                    "Too many attempts. Try again in %d second.",
		"said.expired":                           "no answer before expires_at",
		"said.autorefund":                        "auto-refund: late SUCCESS after TIMEOUT",
		"said.autorefund.actor":                  "momopay: auto-refund",
		"said.cli":                               "command line",
		"said.autorefund.target":                 "a SUCCESS reported after TIMEOUT",
		"said.cli.who":                           "command line: %s",
		"login.signedout":                        "You are signed out.",
		"login.expired":                          "Your session has ended. Sign in again.",
		"login.required":                         "Enter your email and your password.",
		"overview.title":                         "Overview",
		"overview.today":                         "Collected today",
		"overview.week":                          "Last 7 days",
		"overview.success":                       "Success rate (7 days)",
		"overview.count":                         "%d payments",
		"overview.count.one":                     "1 payment",
		"overview.count.zero":                    "0 payments",
		"overview.refunded":                      ", less %s refunded",
		"overview.bystatus":                      "By status",
		"overview.col.today":                     "Today",
		"overview.col.week":                      "7 days",
		"overview.byoperator":                    "By operator",
		"overview.chart":                         "Collected per day, last 7 days",
		"overview.latest":                        "Latest transactions",
		"overview.alerts":                        "Needs attention",
		"overview.undelivered":                   "%d webhook deliveries could not be delivered.",
		"overview.undelivered.one":               "1 webhook delivery could not be delivered.",
		"overview.cases":                         "%d reconciliation cases are open.",
		"overview.cases.one":                     "1 reconciliation case is open.",
		"overview.allgood":                       "Nothing needs attention.",
		"overview.all":                           "See all transactions",
		"overview.nodata":                        "No payments yet.",
		"keys.title":                             "API keys",
		"keys.intro":                             "Your server sends an API key with every request to /v1. A key is shown once, when it is created.",
		"keys.create":                            "Create a key",
		"keys.prefix":                            "Key",
		"keys.lastused":                          "Last used",
		"keys.revoked":                           "Revoked",
		"keys.active":                            "Active",
		"keys.revoke":                            "Revoke",
		"keys.new.title":                         "Your new API key",
		"keys.new.warning":                       "Copy this key now and keep it somewhere safe. It will not be shown again.",
		"keys.new.done":                          "I have copied it",
		"keys.again.title":                       "This key was already created",
		"keys.again.body":                        "The form was sent again (the page was reloaded). The key %s was made the first time and shown then, once; no other key was made. If you did not copy it, revoke it and create another.",
		"keys.again.back":                        "Back to the keys",
		"keys.revoke.title":                      "Revoke this API key?",
		"keys.revoke.body":                       "Requests made with %s will be refused at once. This cannot be undone.",
		"keys.revoke.confirm":                    "Revoke the key",
		"keys.revoked.flash":                     "The key was revoked.",
		"keys.toomany":                           "No key was made: an account has at most 50 active API keys. Revoke one you no longer use first.",
		"keys.already.title":                     "This key is already revoked",
		"keys.already.body":                      "Requests made with %s are refused. It was revoked on",
		"team.title":                             "Team",
		"team.add":                               "Add a user",
		"team.password":                          "Initial password",
		"team.password.help":                     "12 to 72 characters (accented letters count as two), not easy to guess: a few unrelated words are best. Give it to them privately; they can change it.",
		"team.changerole":                        "Change role",
		"team.remove":                            "Remove",
		"team.remove.title":                      "Remove this user?",
		"team.remove.body":                       "%s will be signed out everywhere and can no longer sign in.",
		"team.remove.confirm":                    "Remove the user",
		"team.added":                             "The user was added.",
		"team.removed":                           "The user was removed.",
		"team.rolechanged":                       "The role was changed.",
		"team.roleunchanged":                     "Nothing changed: the user had that role already.",
		"team.gone.title":                        "This user is not on your team",
		"team.gone.body":                         "They may have been removed already. The team page shows who has access now.",
		"team.toomany":                           "No user was added: a team has at most 100 users. Remove one who no longer needs access first.",
		"team.roles.help":                        "Owner: everything, the team included. Developer: keys, webhooks, transactions, sandbox phone. Viewer: read only.",
		"audit.title":                            "Audit log",
		"audit.intro":                            "Who did what in this account. Entries cannot be changed or deleted.",
		"audit.who":                              "Who",
		"audit.action":                           "Action",
		"audit.act.user.sign_in":                 "Signed in",
		"audit.act.user.sign_in_failed":          "Failed sign-in",
		"audit.act.user.sign_out":                "Signed out",
		"audit.act.api_key.created":              "API key created",
		"audit.act.api_key.revoked":              "API key revoked",
		"audit.act.user.added":                   "User added",
		"audit.act.user.removed":                 "User removed",
		"audit.act.user.role_changed":            "Role changed",
		"audit.act.user.password_changed":        "Password changed",
		"audit.act.reconciliation.case_resolved": "Reconciliation case resolved",
		"audit.act.webhook.delivery_resent":      "Delivery re-sent",
		"audit.act.webhook.endpoint_added":       "Webhook endpoint added",
		"audit.act.webhook.endpoint_deleted":     "Webhook endpoint deleted",
		"audit.act.webhook.endpoint_disabled":    "Webhook endpoint disabled",
		"audit.act.webhook.endpoint_enabled":     "Webhook endpoint enabled",
		"audit.act.webhook.secret_rotated":       "Webhook secret rotated",
		"audit.act.webhook.undelivered_resent":   "Undelivered deliveries re-sent",
		"audit.act.transaction.refund_requested": "Refund requested",
		"audit.act.transaction.refund_answered":  "Refund answered",
		"audit.act.merchant.auto_refund_on":      "Automatic refunds of late payments turned on",
		"audit.act.merchant.auto_refund_off":     "Automatic refunds of late payments turned off",
		"audit.target":                           "Target",
		"audit.address":                          "Address",
		"account.title":                          "Account",
		"account.password":                       "Change your password",
		"account.current":                        "Current password",
		"account.new":                            "New password",
		"account.password.help":                  "12 to 72 characters (accented letters count as two), not easy to guess: a few unrelated words are best. Changing it signs you out everywhere else.",
		"account.changed":                        "Your password was changed. Your other sessions were signed out.",
		"account.wrong":                          "The current password is wrong.",
		"account.language":                       "Language",
		"account.lang.auto":                      "As my browser",
		"account.langsaved":                      "Your language was saved.",
		"status.PENDING":                         "Pending",
		"status.SUCCESS":                         "Succeeded",
		"status.FAILED":                          "Failed",
		"status.TIMEOUT":                         "Timed out",
		"status.EXPIRED":                         "Expired",
	},
	french: {
		"app.name":                               "momopay",
		"lang.en":                                "English",
		"lang.fr":                                "Français",
		"lang.switch":                            "Langue",
		"nav.overview":                           "Vue d'ensemble",
		"nav.transactions":                       "Transactions",
		"nav.keys":                               "Clés d'API",
		"nav.webhooks":                           "Webhooks",
		"nav.reconciliation":                     "Rapprochement",
		"nav.phone":                              "Téléphone de test",
		"nav.team":                               "Équipe",
		"nav.audit":                              "Journal d'audit",
		"nav.account":                            "Compte",
		"nav.signout":                            "Se déconnecter",
		"nav.menu":                               "Menu",
		"nav.skip":                               "Aller au contenu",
		"mode.sandbox":                           "Bac à sable",
		"mode.sandbox.note":                      "Mode bac à sable : les paiements sont simulés, aucun argent ne circule.",
		"role.owner":                             "Propriétaire",
		"role.developer":                         "Développeur",
		"role.viewer":                            "Lecteur",
		"common.save":                            "Enregistrer",
		"common.cancel":                          "Annuler",
		"common.created":                         "Date de création",
		"common.none":                            "Rien pour l'instant.",
		"common.never":                           "Jamais",
		"common.actions":                         "Actions",
		"common.email":                           "E-mail",
		"common.role":                            "Rôle",
		"common.status":                          "Statut",
		"common.operator":                        "Opérateur",
		"common.amount":                          "Montant",
		"common.reference":                       "Référence",
		"common.when":                            "Date",
		"common.back":                            "Retour",
		"common.newest":                          "Plus récents",
		"common.older":                           "Plus anciens",
		"common.copy":                            "Copier",
		"common.copied":                          "Copié",
		"common.you":                             "vous",
		"common.labelled":                        "%s : %s",
		"error.title":                            "Une erreur est survenue",
		"error.body":                             "Une erreur interne est survenue. Si elle se reproduit, indiquez cet identifiant de requête :",
		"unavailable.title":                      "Momentanément indisponible",
		"unavailable.body":                       "Le service n'a pas pu joindre sa base de données à l'instant. Réessayez dans quelques secondes. Si vous enregistriez une modification, vérifiez si elle a été faite avant de la refaire.",
		"notfound.title":                         "Introuvable",
		"notfound.body":                          "Cette page n'existe pas, ou elle appartient à un autre compte.",
		"badmethod.title":                        "Action non disponible à cette adresse",
		"badmethod.body":                         "Cette adresse ne répond pas à ce type de requête. Revenez en arrière et utilisez les liens et boutons de la page.",
		"forbidden.title":                        "Action non autorisée",
		"crossorigin.title":                      "Formulaire refusé",
		"crossorigin.body":                       "Ce formulaire a été envoyé depuis un autre site : il n'a pas été pris en compte. Ouvrez le tableau de bord à sa propre adresse et réessayez. Si c'est déjà le cas, le proxy placé devant momopay modifie l'adresse demandée par le navigateur : il doit transmettre l'en-tête Host tel quel.",
		"forbidden.body":                         "Votre rôle ne permet pas cette action. Demandez-le à un propriétaire du compte.",
		"form.fix":                               "Veuillez corriger les champs ci-dessous.",
		"form.unreadable":                        "Le formulaire n'a pas pu être lu. Rechargez la page et réessayez.",
		"login.title":                            "Connexion",
		"login.heading":                          "Connectez-vous à votre tableau de bord",
		"login.email":                            "E-mail",
		"login.password":                         "Mot de passe",
		"login.submit":                           "Se connecter",
		"login.failed":                           "E-mail ou mot de passe incorrect.",
		"login.throttled":                        "Trop de tentatives. Réessayez dans %d secondes.",
		"login.throttled.one":                    "Trop de tentatives. Réessayez dans %d seconde.",
		"said.expired":                           "pas de réponse avant l'expiration (expires_at)",
		"said.autorefund":                        "remboursement automatique : SUCCESS tardif après TIMEOUT",
		"said.autorefund.actor":                  "momopay : remboursement automatique",
		"said.cli":                               "ligne de commande",
		"said.autorefund.target":                 "un SUCCESS signalé après TIMEOUT",
		"said.cli.who":                           "ligne de commande : %s",
		"login.signedout":                        "Déconnexion effectuée.",
		"login.expired":                          "Votre session a pris fin. Connectez-vous à nouveau.",
		"login.required":                         "Saisissez votre e-mail et votre mot de passe.",
		"overview.title":                         "Vue d'ensemble",
		"overview.today":                         "Encaissé aujourd'hui",
		"overview.week":                          "7 derniers jours",
		"overview.success":                       "Taux de réussite (7 jours)",
		"overview.count":                         "%d paiements",
		"overview.count.one":                     "1 paiement",
		"overview.count.zero":                    "Aucun paiement",
		"overview.refunded":                      ", moins %s remboursés",
		"overview.bystatus":                      "Par statut",
		"overview.col.today":                     "Aujourd'hui",
		"overview.col.week":                      "7 jours",
		"overview.byoperator":                    "Par opérateur",
		"overview.chart":                         "Encaissé par jour, 7 derniers jours",
		"overview.latest":                        "Dernières transactions",
		"overview.alerts":                        "À traiter",
		"overview.undelivered":                   "%d envois de webhook n'ont pas pu être livrés.",
		"overview.undelivered.one":               "1 envoi de webhook n'a pas pu être livré.",
		"overview.cases":                         "%d cas de rapprochement sont ouverts.",
		"overview.cases.one":                     "1 cas de rapprochement est ouvert.",
		"overview.allgood":                       "Rien à traiter.",
		"overview.all":                           "Voir toutes les transactions",
		"overview.nodata":                        "Aucun paiement pour l'instant.",
		"keys.title":                             "Clés d'API",
		"keys.intro":                             "Votre serveur envoie une clé d'API avec chaque requête vers /v1. Une clé n'est affichée qu'une fois, à sa création.",
		"keys.create":                            "Créer une clé",
		"keys.prefix":                            "Clé",
		"keys.lastused":                          "Dernière utilisation",
		"keys.revoked":                           "Révoquée",
		"keys.active":                            "Active",
		"keys.revoke":                            "Révoquer",
		"keys.new.title":                         "Votre nouvelle clé d'API",
		"keys.new.warning":                       "Copiez cette clé maintenant et conservez-la en lieu sûr. Elle ne sera plus affichée.",
		"keys.new.done":                          "Je l'ai copiée",
		"keys.again.title":                       "Cette clé a déjà été créée",
		"keys.again.body":                        "Le formulaire a été renvoyé (la page a été rechargée). La clé %s a été créée la première fois et affichée alors, une seule fois ; aucune autre clé n'a été créée. Si vous ne l'avez pas copiée, révoquez-la et créez-en une autre.",
		"keys.again.back":                        "Retour aux clés",
		"keys.revoke.title":                      "Révoquer cette clé d'API ?",
		"keys.revoke.body":                       "Les requêtes faites avec %s seront refusées immédiatement. C'est irréversible.",
		"keys.revoke.confirm":                    "Révoquer la clé",
		"keys.revoked.flash":                     "La clé a été révoquée.",
		"keys.toomany":                           "Aucune clé créée : un compte a au plus 50 clés d'API actives. Révoquez d'abord une clé qui ne sert plus.",
		"keys.already.title":                     "Cette clé est déjà révoquée",
		"keys.already.body":                      "Les requêtes faites avec %s sont refusées. Elle a été révoquée le",
		"team.title":                             "Équipe",
		"team.add":                               "Ajouter un utilisateur",
		"team.password":                          "Mot de passe initial",
		"team.password.help":                     "12 à 72 caractères (une lettre accentuée compte pour deux), difficile à deviner : quelques mots sans rapport entre eux conviennent le mieux. Transmettez-le en privé ; il pourra être changé.",
		"team.changerole":                        "Changer le rôle",
		"team.remove":                            "Retirer",
		"team.remove.title":                      "Retirer cet utilisateur ?",
		"team.remove.body":                       "Toutes les sessions de %s seront fermées, et ce compte ne pourra plus se connecter.",
		"team.remove.confirm":                    "Retirer l'utilisateur",
		"team.added":                             "L'utilisateur a été ajouté.",
		"team.removed":                           "L'utilisateur a été retiré.",
		"team.rolechanged":                       "Le rôle a été changé.",
		"team.roleunchanged":                     "Rien n'a changé : l'utilisateur avait déjà ce rôle.",
		"team.gone.title":                        "Cet utilisateur ne fait pas partie de votre équipe",
		"team.gone.body":                         "Il a peut-être déjà été retiré. La page Équipe montre qui a accès aujourd'hui.",
		"team.toomany":                           "Aucun utilisateur ajouté : une équipe compte au plus 100 utilisateurs. Retirez d'abord quelqu'un qui n'a plus besoin d'accès.",
		"team.roles.help":                        "Propriétaire : tout, y compris l'équipe. Développeur : clés, webhooks, transactions, téléphone de test. Lecteur : lecture seule.",
		"audit.title":                            "Journal d'audit",
		"audit.intro":                            "Qui a fait quoi sur ce compte. Les entrées ne peuvent être ni modifiées ni supprimées.",
		"audit.who":                              "Qui",
		"audit.action":                           "Action",
		"audit.act.user.sign_in":                 "Connexion",
		"audit.act.user.sign_in_failed":          "Échec de connexion",
		"audit.act.user.sign_out":                "Déconnexion",
		"audit.act.api_key.created":              "Clé d'API créée",
		"audit.act.api_key.revoked":              "Clé d'API révoquée",
		"audit.act.user.added":                   "Utilisateur ajouté",
		"audit.act.user.removed":                 "Utilisateur retiré",
		"audit.act.user.role_changed":            "Rôle changé",
		"audit.act.user.password_changed":        "Mot de passe modifié",
		"audit.act.reconciliation.case_resolved": "Cas de rapprochement résolu",
		"audit.act.webhook.delivery_resent":      "Envoi renvoyé",
		"audit.act.webhook.endpoint_added":       "Point de réception ajouté",
		"audit.act.webhook.endpoint_deleted":     "Point de réception supprimé",
		"audit.act.webhook.endpoint_disabled":    "Point de réception désactivé",
		"audit.act.webhook.endpoint_enabled":     "Point de réception activé",
		"audit.act.webhook.secret_rotated":       "Secret de webhook changé",
		"audit.act.webhook.undelivered_resent":   "Envois non livrés renvoyés",
		"audit.act.transaction.refund_requested": "Remboursement demandé",
		"audit.act.transaction.refund_answered":  "Réponse à la demande de remboursement",
		"audit.act.merchant.auto_refund_on":      "Remboursement automatique des paiements tardifs activé",
		"audit.act.merchant.auto_refund_off":     "Remboursement automatique des paiements tardifs désactivé",
		"audit.target":                           "Cible",
		"audit.address":                          "Adresse",
		"account.title":                          "Compte",
		"account.password":                       "Changer de mot de passe",
		"account.current":                        "Mot de passe actuel",
		"account.new":                            "Nouveau mot de passe",
		"account.password.help":                  "12 à 72 caractères (une lettre accentuée compte pour deux), difficile à deviner : quelques mots sans rapport entre eux conviennent le mieux. Ce changement ferme vos sessions sur vos autres appareils.",
		"account.changed":                        "Votre mot de passe a été changé. Vos autres sessions ont été fermées.",
		"account.wrong":                          "Le mot de passe actuel est incorrect.",
		"account.language":                       "Langue",
		"account.lang.auto":                      "Comme mon navigateur",
		"account.langsaved":                      "Votre langue a été enregistrée.",
		"status.PENDING":                         "En attente",
		"status.SUCCESS":                         "Réussi",
		"status.FAILED":                          "Échoué",
		"status.TIMEOUT":                         "Délai dépassé",
		"status.EXPIRED":                         "Expiré",
	},
}

// addMessages merges a page's own catalogue into messages; a file that
// adds pages calls it from init with its English and French keys, so that
// pages added side by side do not edit one shared map.
func addMessages(en, fr map[string]string) {
	for k, v := range en {
		messages[english][k] = v
	}
	for k, v := range fr {
		messages[french][k] = v
	}
}
