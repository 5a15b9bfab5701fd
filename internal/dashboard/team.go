package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Team manages a merchant's users. Every method is scoped to merchantID;
// another merchant's user id is team.ErrNotFound.
type Team interface {
	List(ctx context.Context, merchantID string) ([]team.User, error)
	User(ctx context.Context, merchantID, id string) (*team.User, error)
	Add(ctx context.Context, merchantID, email string, role team.Role, password string, now time.Time) (*team.User, error)
	SetRole(ctx context.Context, merchantID, id string, role team.Role) (was team.Role, err error)
	Remove(ctx context.Context, merchantID, id string) error
}

type teamPage struct {
	layout
	Users []team.User
	Roles []team.Role
	// The add form, refilled after a validation error.
	Email string
	Role  team.Role
	// Error is a catalogue key for a refusal of a change in the table
	// (the last owner's role); Fields, one per field of the add form.
	Error  string
	Fields map[string]string
}

type userRemovePage struct {
	layout
	Member team.User
}

func (d *Dashboard) teamPage(r *http.Request) (*teamPage, error) {
	users, err := d.team.List(r.Context(), sessionOf(r).MerchantID)
	if err != nil {
		return nil, err
	}
	return &teamPage{layout: layout{Title: "team.title", Nav: "team"}, Users: users, Roles: team.Roles, Role: team.Developer}, nil
}

// teamProblem answers 422 with the team page when err is a domain
// refusal, and reports whether it answered. With fill (the add form's
// refusal: fill refills it, and password is the one sent) each field's
// error is shown under it; without, a change made in the table, the
// refusal is one message above it.
func (d *Dashboard) teamProblem(w http.ResponseWriter, r *http.Request, err error, password string, fill func(*teamPage)) bool {
	msg, fields, ok := userProblems(err, password)
	if !ok {
		return false
	}
	p, err := d.teamPage(r)
	if err != nil {
		d.fail(w, r, err)
		return true
	}
	if fill != nil && len(fields) > 0 {
		p.Fields = fields
		fill(p)
	} else {
		p.Error = oneMessage(msg, fields)
	}
	d.render(w, r, http.StatusUnprocessableEntity, "team", p)
	return true
}

func (d *Dashboard) handleTeam() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := d.teamPage(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "team", p)
	})
}

func (d *Dashboard) handleUserAdd() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		s := sessionOf(r)
		email, role, password := team.NormalizeEmail(r.PostForm.Get("email")), team.Role(r.PostForm.Get("role")), r.PostForm.Get("password")
		u, err := d.team.Add(r.Context(), s.MerchantID, email, role, password, d.now())
		if d.teamProblem(w, r, err, password, func(p *teamPage) { p.Email, p.Role = email, role }) {
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionUserAdded, u.Email+" ("+string(u.Role)+")")
		d.redirectWithFlash(w, r, "/team", "team.added", "")
	})
}

func (d *Dashboard) handleUserRole() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		s := sessionOf(r)
		u, err := d.team.User(r.Context(), s.MerchantID, r.PathValue("id"))
		if err != nil {
			d.userFailed(w, r, err)
			return
		}
		role := team.Role(r.PostForm.Get("role"))
		was, err := d.team.SetRole(r.Context(), s.MerchantID, u.ID, role)
		if d.teamProblem(w, r, err, "", nil) {
			return
		}
		if err != nil {
			d.userFailed(w, r, err)
			return
		}
		if was == role { // the role the user had: no change to log or to announce
			d.redirectWithFlash(w, r, "/team", "team.roleunchanged", "")
			return
		}
		d.Audit(r.Context(), team.ActionRoleChanged, u.Email+": "+string(was)+" → "+string(role))
		d.redirectWithFlash(w, r, "/team", "team.rolechanged", "")
	})
}

func (d *Dashboard) handleUserRemoveConfirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := d.team.User(r.Context(), sessionOf(r).MerchantID, r.PathValue("id"))
		if err != nil {
			d.userFailed(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "user_remove", &userRemovePage{layout: layout{Title: "team.remove.title", Nav: "team"}, Member: *u})
	})
}

func (d *Dashboard) handleUserRemove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		u, err := d.team.User(r.Context(), s.MerchantID, r.PathValue("id"))
		if err != nil {
			d.userFailed(w, r, err)
			return
		}
		err = d.team.Remove(r.Context(), s.MerchantID, u.ID)
		if d.teamProblem(w, r, err, "", nil) {
			return
		}
		if err != nil {
			d.userFailed(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionUserRemoved, u.Email)
		if u.ID == s.User.ID {
			clearSessionCookie(w)
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		d.redirectWithFlash(w, r, "/team", "team.removed", "")
	})
}

// userFailed answers an error of a team change. A user who is not on the
// team gets a page that says so and leads back to the team, rather than
// the general "not found": users are deleted when removed, so this is
// what a second click on remove, the back button after it, or the loser
// of two people removing one user at once gets (another merchant's user
// is not on the team either, and the page says nothing of it).
func (d *Dashboard) userFailed(w http.ResponseWriter, r *http.Request, err error) {
	if !isNotFound(err) || wantsJSON(r) {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusNotFound, "message", &messagePage{layout: layout{Title: "team.gone.title", Nav: "team"},
		Heading: "team.gone.title", Body: "team.gone.body", Back: "/team"})
}

// isNotFound reports a domain not-found error.
func isNotFound(err error) bool {
	e, ok := errors.AsType[*payment.Error](err)
	return ok && e.Code == payment.ENOTFOUND
}
