package dashboard

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/webhook"
)

// The dashboard's words for the domain's refusals of its forms.
//
// The domain packages word a refusal in English, for the API; a page shows
// it in its own language, so each refused field is named here by a
// catalogue key, chosen by the error's kind and field: a sentinel error
// (team.ErrEmailTaken, team.ErrLastOwner, a reason of webhook.ValidateURL
// in urlReasons), a code (payment.EUNPROCESSABLE for a URL registered
// already) or an exported bound (team.MaxPassword).

// refusal is err as a domain refusal of what the user sent: not nil, not a
// not-found, not an internal error.
func refusal(err error) (*payment.Error, bool) {
	e, ok := errors.AsType[*payment.Error](err)
	if !ok || e.Code == payment.EINTERNAL || e.Code == payment.ENOTFOUND {
		return nil, false
	}
	return e, true
}

// userProblems names, in catalogue keys, what is wrong with a user's email,
// role or password (the one sent, to tell its length from its characters).
// fields holds one key per field the domain named; message, a key for the
// whole form, is set when it named none. ok is false when err is no
// refusal.
func userProblems(err error, password string) (message string, fields map[string]string, ok bool) {
	e, ok := refusal(err)
	if !ok {
		return "", nil, false
	}
	if errors.Is(err, team.ErrTooManyUsers) {
		return "team.toomany", nil, true
	}
	fields = map[string]string{}
	for field := range e.Fields {
		switch field {
		case "email":
			fields[field] = "form.email.bad"
			if errors.Is(err, team.ErrEmailTaken) {
				fields[field] = "team.email.taken"
			}
		case "role":
			fields[field] = "team.role.bad"
			if errors.Is(err, team.ErrLastOwner) {
				fields[field] = "team.lastowner"
			}
		case "password":
			fields[field] = passwordProblem(password, e.Fields[field])
		default:
			fields[field] = "form.field.bad"
		}
	}
	if len(fields) == 0 {
		return "form.refused", nil, true
	}
	return "", fields, true
}

// passwordProblem is the key for a password the domain refused with the
// message refused: too easy to guess, or else its length in bytes (what
// bcrypt counts), or else its characters.
func passwordProblem(password, refused string) string {
	if refused == team.PasswordGuessable {
		return "form.password.guessable"
	}
	if n := len(password); n < team.MinPassword || n > team.MaxPassword {
		return "form.password.length"
	}
	return "form.password.chars"
}

// oneMessage is a refusal as one message, for a form with no field of its
// own to show it under (a role changed in the team's table): message, or
// the key of the first field named.
func oneMessage(message string, fields map[string]string) string {
	if message != "" {
		return message
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	return fields[names[0]]
}

// urlProblem is the key for a webhook URL the domain refused; ok is false
// when err is no refusal.
func urlProblem(err error) (string, bool) {
	e, ok := refusal(err)
	if !ok {
		return "", false
	}
	if errors.Is(err, webhook.ErrTooManyEndpoints) {
		return "wh.endpoints.max", true
	}
	if e.Code == payment.EUNPROCESSABLE {
		return "wh.url.taken", true
	}
	return urlReasons.key(err, "wh.url.bad"), true
}

// reasonKeys gives the catalogue key of each Reason of a refusal.
type reasonKeys []struct {
	reason error
	key    string
}

// key is the key of err's reason, or fallback for one not listed.
func (rk reasonKeys) key(err error, fallback string) string {
	for _, r := range rk {
		if errors.Is(err, r.reason) {
			return r.key
		}
	}
	return fallback
}

// urlReasons gives the key of each reason webhook.ValidateURL refuses a URL
// for.
var urlReasons = reasonKeys{
	{webhook.ErrURLRequired, "wh.url.required"},
	{webhook.ErrURLTooLong, "wh.url.long"},
	{webhook.ErrURLUnparsable, "wh.url.bad"},
	{webhook.ErrURLNotHTTPS, "wh.url.https"},
	{webhook.ErrURLScheme, "wh.url.scheme"},
	{webhook.ErrURLNoHost, "wh.url.host"},
	{webhook.ErrURLUserinfo, "wh.url.userinfo"},
	{webhook.ErrURLSpace, "wh.url.space"},
	{webhook.ErrURLPort, "wh.url.port"},
	{webhook.ErrURLLocalhost, "wh.url.localhost"},
	{webhook.ErrURLNumericHost, "wh.url.numeric"},
	{webhook.ErrURLNonPublic, "wh.url.private.live"},
	{webhook.ErrURLPrivateLocal, "wh.url.private"},
}

// noteProblem is the key for a case's note that payment.ValidateResolution
// refused, told by the note itself as the rule is.
func noteProblem(note string) string {
	switch {
	case strings.TrimSpace(note) == "":
		return "rc.note.empty"
	case utf8.RuneCountInString(note) > payment.MaxResolutionNote:
		return "rc.note.long"
	}
	return "rc.note.text"
}

// resendProblem is the flash for a re-send the webhook service refused; ok
// is false when err is no refusal.
func resendProblem(err error) (string, bool) {
	if _, ok := refusal(err); !ok {
		return "", false
	}
	return resendReasons.key(err, "wh.resend.refused"), true
}

var resendReasons = reasonKeys{
	{webhook.ErrResendTest, "wh.resend.test"},
	{webhook.ErrResendDelivered, "wh.resend.delivered"},
	{webhook.ErrResendDeleted, "wh.resend.deleted"},
	{webhook.ErrResendBusy, "wh.resend.busy"},
	{webhook.ErrManualBusy, "wh.manual.busy"},
}

// filterProblems names the delivery history's refused filter values.
func filterProblems(fields map[string]string) map[string]string {
	out := map[string]string{}
	for field := range fields {
		out[field] = "wh.filter.bad"
		if field == "after" {
			out[field] = "tx.filter.bad.page"
		}
	}
	return out
}

// FixFields is the alert above a form whose fields hold errors: how many
// fields to correct, each error being shown under its own field.
func (l *layout) FixFields(fields map[string]string) string {
	if len(fields) == 1 {
		return l.T("form.fix.one")
	}
	return l.T("form.fix.many", len(fields))
}

func init() {
	addMessages(map[string]string{
		"form.fix.one":            "Please correct the field below.",
		"form.fix.many":           "Please correct the %d fields below.",
		"form.refused":            "This change was refused. Check what you entered and try again.",
		"form.field.bad":          "This value cannot be used.",
		"form.email.bad":          "Enter an email address such as name@example.com (at most 254 characters).",
		"form.password.length":    "The password must be 12 to 72 characters long (accented letters count as two).",
		"form.password.chars":     "The password must not contain control characters.",
		"form.password.guessable": "This password is too easy to guess: it is a common one, or made of a word with digits, a keyboard row, a repeat, your email or the account's name. A few unrelated words make a strong one.",
		"team.email.taken":        "A user with this email already exists.",
		"team.role.bad":           "Choose a role from the list.",
		"team.lastowner":          "The account must keep at least one owner.",
		"wh.url.required":         "Enter the endpoint's URL.",
		"wh.url.long":             fmt.Sprintf("The URL must be at most %d characters long.", webhook.MaxURLLength),
		"wh.url.bad":              "This is not a URL an endpoint can have. Enter one such as https://example.com/webhooks.",
		"wh.url.https":            "In live mode the URL must start with https://.",
		"wh.url.scheme":           "The URL must start with http:// or https://.",
		"wh.url.host":             "The URL must include a host name, as in https://example.com/webhooks.",
		"wh.url.userinfo":         "The URL must not contain a user name or password.",
		"wh.url.space":            "The URL must not contain spaces: write a space as %20.",
		"wh.url.port":             "The URL's port is not valid: it must be a number from 1 to 65535.",
		"wh.url.localhost":        "In live mode the URL must not point to localhost.",
		"wh.url.numeric":          "Name the host, or give a full IP address (like 203.0.113.7), not a shortened or numeric form.",
		"wh.url.private.live":     "In live mode the URL must not point to a private, loopback or link-local address.",
		"wh.url.private":          "The URL must not point to a private or link-local address (loopback is allowed in the sandbox).",
		"wh.url.taken":            "This URL is registered already: use that endpoint (enable it if it is disabled) rather than adding a second.",
		"wh.endpoints.max":        fmt.Sprintf("An account has at most %d webhook endpoints: delete one you no longer use first.", webhook.MaxEndpoints),
		"wh.filter.bad":           "Choose a value from the list.",
	}, map[string]string{
		"form.fix.one":            "Veuillez corriger le champ ci-dessous.",
		"form.fix.many":           "Veuillez corriger les %d champs ci-dessous.",
		"form.refused":            "Ce changement a été refusé. Vérifiez votre saisie et réessayez.",
		"form.field.bad":          "Cette valeur ne peut pas être utilisée.",
		"form.email.bad":          "Saisissez une adresse e-mail comme nom@exemple.com (254 caractères au plus).",
		"form.password.length":    "Le mot de passe doit compter de 12 à 72 caractères (une lettre accentuée compte pour deux).",
		"form.password.chars":     "Le mot de passe ne doit pas contenir de caractères de contrôle.",
		"form.password.guessable": "Ce mot de passe est trop facile à deviner : il est courant, ou fait d'un mot suivi de chiffres, d'une suite de touches, d'une répétition, de votre e-mail ou du nom du compte. Quelques mots sans rapport entre eux en font un solide.",
		"team.email.taken":        "Un utilisateur avec cet e-mail existe déjà.",
		"team.role.bad":           "Choisissez un rôle dans la liste.",
		"team.lastowner":          "Le compte doit garder au moins un propriétaire.",
		"wh.url.required":         "Saisissez l'URL du point de réception.",
		"wh.url.long":             fmt.Sprintf("L'URL doit compter au plus %d caractères.", webhook.MaxURLLength),
		"wh.url.bad":              "Ce n'est pas une URL de point de réception. Saisissez-en une comme https://exemple.com/webhooks.",
		"wh.url.https":            "En mode réel, l'URL doit commencer par https://.",
		"wh.url.scheme":           "L'URL doit commencer par http:// ou https://.",
		"wh.url.host":             "L'URL doit comporter un nom d'hôte, comme dans https://exemple.com/webhooks.",
		"wh.url.userinfo":         "L'URL ne doit contenir ni nom d'utilisateur ni mot de passe.",
		"wh.url.space":            "L'URL ne doit pas contenir d'espaces : remplacez-les par %20.",
		"wh.url.port":             "Le port de l'URL n'est pas valide : ce doit être un nombre de 1 à 65535.",
		"wh.url.localhost":        "En mode réel, l'URL ne doit pas désigner localhost.",
		"wh.url.numeric":          "Nommez l'hôte, ou donnez une adresse IP complète (comme 203.0.113.7), pas une forme abrégée ou numérique.",
		"wh.url.private.live":     "En mode réel, l'URL ne doit pas désigner une adresse privée, de bouclage ou locale au lien.",
		"wh.url.private":          "L'URL ne doit pas désigner une adresse privée ou locale au lien (le bouclage est permis dans le bac à sable).",
		"wh.url.taken":            "Cette URL est déjà enregistrée : utilisez ce point de réception (activez-le s'il est désactivé) plutôt que d'en ajouter un second.",
		"wh.endpoints.max":        fmt.Sprintf("Un compte a au plus %d points de réception de webhooks : supprimez d'abord celui dont vous ne vous servez plus.", webhook.MaxEndpoints),
		"wh.filter.bad":           "Choisissez une valeur dans la liste.",
	})
}
