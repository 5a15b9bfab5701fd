package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
)

// TestDailyTotals: the overview's totals follow each insert, settlement
// and delete in the same database transaction, by N'Djamena day.
func TestDailyTotals(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		figures := store.NewFigures(db)
		late := time.Date(2026, 3, 10, 23, 30, 0, 0, time.UTC) // 00:30 on the 11th in N'Djamena
		a, b, c := create("a", late), create("b", late), create("c", late.Add(-time.Hour))
		merchant := a.MerchantID
		totals := func() map[string]store.DailyTotal {
			t.Helper()
			list, err := figures.DailyTotals(ctx, merchant, "2026-03-01", "2026-03-31")
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]store.DailyTotal{}
			for _, d := range list {
				out[d.Day+" "+string(d.Status)] = d
			}
			return out
		}
		check := func(when string, want map[string]int64) {
			t.Helper()
			got := totals()
			if len(got) != len(want) {
				t.Errorf("%s: totals %v, want counts %v", when, got, want)
			}
			for k, n := range want {
				if got[k].Count != n || got[k].Amount != n*1500 || got[k].Operator != payment.OperatorAirtel {
					t.Errorf("%s: %s is %+v, want %d", when, k, got[k], n)
				}
			}
		}
		check("after inserts", map[string]int64{"2026-03-11 PENDING": 2, "2026-03-10 PENDING": 1})

		settle := func(tr *payment.Transaction, to payment.Status) {
			t.Helper()
			if _, _, err := txs.Settle(ctx, payment.Settlement{MerchantID: merchant, TransactionID: tr.ID, To: to,
				At: late.Add(10 * time.Minute), Source: "test", Reconcile: true}); err != nil {
				t.Fatal(err)
			}
		}
		settle(a, payment.StatusSuccess)
		settle(a, payment.StatusFailed) // a late contrary outcome: a case, not a change
		settle(c, payment.StatusTimeout)
		check("after settlements", map[string]int64{"2026-03-11 PENDING": 1, "2026-03-11 SUCCESS": 1, "2026-03-10 TIMEOUT": 1})

		if deleted, err := txs.DeleteTransaction(ctx, merchant, b.ID); err != nil || !deleted {
			t.Fatalf("delete: %v %v", deleted, err)
		}
		if deleted, err := txs.DeleteTransaction(ctx, merchant, a.ID); err != nil || deleted {
			t.Fatalf("delete a settled one: %v %v", deleted, err)
		}
		check("after a delete", map[string]int64{"2026-03-11 SUCCESS": 1, "2026-03-10 TIMEOUT": 1})

		// A duplicate reference adds nothing.
		dup := *a
		dup.ID, dup.InternalRef = uuid.NewString(), "SERVICE-X"+uuid.NewString()[:6]
		if err := txs.CreateTransaction(ctx, &dup); payment.ErrorCode(err) != payment.EDUPLICATE {
			t.Fatalf("duplicate: %v", err)
		}
		check("after a duplicate", map[string]int64{"2026-03-11 SUCCESS": 1, "2026-03-10 TIMEOUT": 1})

		latest, err := figures.LatestTransactions(ctx, merchant, 1)
		if err != nil || len(latest) != 1 || latest[0].ID != a.ID {
			t.Errorf("latest: %v %v", latest, err)
		}
		if cases, err := store.NewReconciliationCases(db).CountOpen(ctx, merchant); err != nil || cases != 1 {
			t.Errorf("open cases: %d, %v", cases, err)
		}
	})
}

func TestUsers(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		merchants, users := store.NewMerchants(db), store.NewUsers(db)
		m, err := merchants.Create(ctx, "Shop", "owner@shop.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		other, err := merchants.Create(ctx, "Other", "owner@other.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		list, err := users.List(ctx, m.ID)
		if err != nil || len(list) != 1 || list[0].Email != "owner@shop.td" || list[0].Role != team.Owner {
			t.Fatalf("a new merchant's users: %v %v", list, err)
		}
		owner := list[0]
		dev, err := users.Add(ctx, m.ID, " Dev@Shop.td ", team.Developer, "a developer password", now)
		if err != nil || dev.Email != "dev@shop.td" {
			t.Fatalf("add: %+v %v", dev, err)
		}
		// An email signs in to one merchant only: taken across merchants,
		// and by merchants' own logins.
		for _, email := range []string{"dev@shop.td", "owner@other.td"} {
			if _, err := users.Add(ctx, other.ID, email, team.Viewer, "a viewer password!", now); !errors.Is(err, team.ErrEmailTaken) {
				t.Errorf("add %s again: %v", email, err)
			}
		}
		if _, err := merchants.Create(ctx, "Third", "dev@shop.td", "correct horse battery", now); !errors.Is(err, store.ErrEmailTaken) {
			t.Errorf("a merchant with a user's email: %v", err)
		}
		for _, bad := range []struct {
			email, role, password, field string
		}{{"nope", "viewer", "a long password", "email"}, {"x@shop.td", "admin", "a long password", "role"}, {"x@shop.td", "viewer", "short", "password"}} {
			_, err := users.Add(ctx, m.ID, bad.email, team.Role(bad.role), bad.password, now)
			var e *payment.Error
			if !errors.As(err, &e) || e.Code != payment.EINVALID || e.Fields[bad.field] == "" {
				t.Errorf("add %v: %v", bad, err)
			}
		}
		if u, err := users.CheckPassword(ctx, "DEV@shop.td", "a developer password", false); err != nil || u == nil || u.ID != dev.ID {
			t.Errorf("right password: %v %v", u, err)
		}
		for _, c := range [][2]string{{"dev@shop.td", "a wrong password"}, {"nobody@shop.td", "a developer password"}} {
			if u, err := users.CheckPassword(ctx, c[0], c[1], false); err != nil || u != nil {
				t.Errorf("%v: %v %v", c, u, err)
			}
		}
		// Scoped to the merchant: another merchant's id is not found.
		if _, err := users.User(ctx, other.ID, dev.ID); !errors.Is(err, team.ErrNotFound) {
			t.Errorf("another merchant's user: %v", err)
		}
		for name, err := range map[string]error{
			"role": func() error {
				_, err := users.SetRole(ctx, other.ID, dev.ID, team.Viewer)
				return err
			}(),
			"remove": users.Remove(ctx, other.ID, dev.ID),
			"password": func() error {
				_, err := users.SetPassword(ctx, other.ID, dev.ID, "", "another password", now)
				return err
			}(),
			"language": users.SetLanguage(ctx, other.ID, dev.ID, "fr"),
		} {
			if !errors.Is(err, team.ErrNotFound) {
				t.Errorf("%s of another merchant's user: %v", name, err)
			}
		}
		// A new password made of the user's own email is refused for
		// them (the store finds the email), and the old one still signs
		// in; the same password is no guess for another user.
		_, err = users.SetPassword(ctx, m.ID, dev.ID, "", "dev@shop.td2026", now)
		if e, ok := errors.AsType[*payment.Error](err); !ok || e.Code != payment.EINVALID || e.Fields["password"] != team.PasswordGuessable {
			t.Errorf("a password made of the user's email: %v", err)
		}
		if u, err := users.CheckPassword(ctx, "dev@shop.td", "a developer password", false); err != nil || u == nil {
			t.Errorf("the refused change replaced the password: %v %v", u, err)
		}
		if msg := team.CheckPassword("dev@shop.td2026", owner.Email); msg != "" {
			t.Errorf("the same password for %s: %q", owner.Email, msg)
		}
		// Nor of the merchant's name, for a user added or a password
		// changed: the store finds the name.
		z, err := merchants.Create(ctx, "Zephyrine Tchadienne", "owner@zephyrine.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		guessable := func(what string, err error) {
			t.Helper()
			if e, ok := errors.AsType[*payment.Error](err); !ok || e.Code != payment.EINVALID || e.Fields["password"] != team.PasswordGuessable {
				t.Errorf("%s: %v, want it refused as guessable", what, err)
			}
		}
		_, err = users.Add(ctx, z.ID, "new@zephyrine.td", team.Viewer, "Zephyrine Tchadienne 1", now)
		guessable("a user added with the merchant's name as password", err)
		zs, _ := users.List(ctx, z.ID)
		_, err = users.SetPassword(ctx, z.ID, zs[0].ID, "", "zephyrinetchadienne2026", now)
		guessable("a password changed to the merchant's name", err)
		if _, err := users.Add(ctx, m.ID, "z@shop.td", team.Viewer, "Zephyrine Tchadienne 1", now); err != nil {
			t.Errorf("the same password at another merchant: %v", err)
		}
		// The last owner stays.
		if _, err := users.SetRole(ctx, m.ID, owner.ID, team.Viewer); !errors.Is(err, team.ErrLastOwner) {
			t.Errorf("demote the last owner: %v", err)
		}
		if err := users.Remove(ctx, m.ID, owner.ID); !errors.Is(err, team.ErrLastOwner) {
			t.Errorf("remove the last owner: %v", err)
		}
		if was, err := users.SetRole(ctx, m.ID, dev.ID, team.Owner); err != nil || was != team.Developer {
			t.Fatalf("promote the developer: was %q, %v", was, err)
		}
		if was, err := users.SetRole(ctx, m.ID, dev.ID, team.Owner); err != nil || was != team.Owner {
			t.Errorf("the same role again: was %q, %v (want no change, no error)", was, err)
		}
		if err := users.Remove(ctx, m.ID, owner.ID); err != nil {
			t.Errorf("remove an owner while another stays: %v", err)
		}
		if err := users.SetLanguage(ctx, m.ID, dev.ID, "fr"); err != nil {
			t.Fatal(err)
		}
		if u, _ := users.User(ctx, m.ID, dev.ID); u.Language != "fr" || u.Role != team.Owner {
			t.Errorf("after changes: %+v", u)
		}
	})
}

// shopDay is when shop's merchant is created.
var shopDay = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// shop creates a merchant, "Shop", owned by owner@shop.td.
func shop(t *testing.T, db *store.DB) *store.Merchant {
	t.Helper()
	m, err := store.NewMerchants(db).Create(t.Context(), "Shop", "owner@shop.td", "correct horse battery", shopDay)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTeamBounded: a merchant has at most team.MaxUsers users, also when
// they are added at once: the ones past the bound are refused and not
// stored, another merchant is not affected, and removing a user makes
// room.
func TestTeamBounded(t *testing.T) {
	cost := store.PasswordCost
	t.Cleanup(func() { store.PasswordCost = cost }) // after eachEngine's parallel subtests
	store.PasswordCost = bcrypt.MinCost             // 100 hashes per engine
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, m, now := t.Context(), shop(t, db), shopDay
		users := store.NewUsers(db)
		const extra = 5
		var wg sync.WaitGroup
		var added, refused atomic.Int32
		var last atomic.Value                      // an added user's id
		for i := range team.MaxUsers - 1 + extra { // the owner is one
			wg.Go(func() {
				u, err := users.Add(ctx, m.ID, fmt.Sprintf("user%d@shop.td", i), team.Viewer, "a viewer password!", now)
				switch {
				case err == nil:
					added.Add(1)
					last.Store(u.ID)
				case errors.Is(err, team.ErrTooManyUsers):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		list, err := users.List(ctx, m.ID)
		if err != nil || added.Load() != team.MaxUsers-1 || refused.Load() != extra || len(list) != team.MaxUsers {
			t.Fatalf("%d users added at once to a team of 1: %d added, %d refused, %d stored (%v); want %d, %d, %d",
				team.MaxUsers-1+extra, added.Load(), refused.Load(), len(list), err, team.MaxUsers-1, extra, team.MaxUsers)
		}
		if _, err := users.Add(ctx, m.ID, "late@shop.td", team.Viewer, "a viewer password!", now); !errors.Is(err, team.ErrTooManyUsers) {
			t.Fatalf("one more at the bound: %v, want ErrTooManyUsers", err)
		}
		if _, err := users.ByEmail(ctx, "late@shop.td"); !errors.Is(err, team.ErrNotFound) {
			t.Fatalf("a refused user was stored: %v", err)
		}
		other, err := store.NewMerchants(db).Create(ctx, "Other", "owner@other.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := users.Add(ctx, other.ID, "dev@other.td", team.Developer, "a developer password", now); err != nil {
			t.Fatalf("another merchant's team: %v", err)
		}
		if err := users.Remove(ctx, m.ID, last.Load().(string)); err != nil {
			t.Fatal(err)
		}
		if _, err := users.Add(ctx, m.ID, "late@shop.td", team.Viewer, "a viewer password!", now); err != nil {
			t.Fatalf("an add after a removal: %v", err)
		}
	})
}

// TestLongestPasswordIsExact: bcrypt reads 72 bytes; a password of 72
// bytes signs in as itself only, not followed by anything (before, any
// longer password that began with it was accepted).
func TestLongestPasswordIsExact(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, m, now := t.Context(), shop(t, db), shopDay
		users := store.NewUsers(db)
		pw := strings.Repeat("long password ", 6)[:team.MaxPassword]
		if _, err := users.Add(ctx, m.ID, "long@shop.td", team.Viewer, pw, now); err != nil {
			t.Fatal(err)
		}
		if u, err := users.CheckPassword(ctx, "long@shop.td", pw, false); err != nil || u == nil {
			t.Errorf("the 72-byte password: %v %v", u, err)
		}
		for _, longer := range []string{pw + "x", pw + pw} {
			if u, err := users.CheckPassword(ctx, "long@shop.td", longer, false); err != nil || u != nil {
				t.Errorf("a %d-byte password beginning with it signed in: %v %v", len(longer), u, err)
			}
		}
	})
}

// TestRoleChangeOnceAtOnce: of 20 identical role changes at once, exactly
// one reports a change (was != role), so the dashboard audits one; before,
// the no-op check sat in the handler and each of them logged an entry.
func TestRoleChangeOnceAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, m, now := t.Context(), shop(t, db), shopDay
		users := store.NewUsers(db)
		u, err := users.Add(ctx, m.ID, "dev@shop.td", team.Developer, "a developer password", now)
		if err != nil {
			t.Fatal(err)
		}
		for round, role := range []team.Role{team.Viewer, team.Owner, team.Developer} {
			var changed atomic.Int64
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					was, err := users.SetRole(ctx, m.ID, u.ID, role)
					if err != nil {
						t.Error(err)
					}
					if was != role {
						changed.Add(1)
					}
				})
			}
			wg.Wait()
			if n := changed.Load(); n != 1 {
				t.Errorf("round %d: %d of 20 concurrent changes to %s said they changed the role, want 1", round, n, role)
			}
		}
	})
}

func TestSessions(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, m, now := t.Context(), shop(t, db), shopDay
		users, sessions := store.NewUsers(db), store.NewSessions(db)
		dev, err := users.Add(ctx, m.ID, "dev@shop.td", team.Developer, "a developer password", now)
		if err != nil {
			t.Fatal(err)
		}
		signIn := func(password string) string {
			t.Helper()
			u, err := users.CheckPassword(ctx, "dev@shop.td", password, false)
			if err != nil || u == nil || u.Credential == "" {
				t.Fatalf("sign-in: %+v %v", u, err)
			}
			return u.Credential
		}
		credential := signIn("a developer password")
		start := func() string {
			jti := uuid.NewString()
			if err := sessions.Start(ctx, team.Session{JTI: jti, UserID: dev.ID, MerchantID: m.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(12 * time.Hour)}, credential); err != nil {
				t.Fatal(err)
			}
			return jti
		}
		active := func(jti string, at time.Time) bool {
			t.Helper()
			s, u, err := sessions.Active(ctx, jti, at, at.Add(-30*time.Minute))
			if errors.Is(err, team.ErrNotFound) {
				return false
			}
			if err != nil || s.MerchantName != "Shop" || u.Email != "dev@shop.td" {
				t.Fatalf("active: %+v %+v %v", s, u, err)
			}
			return true
		}
		a := start()
		if !active(a, now.Add(29*time.Minute)) || active(a, now.Add(31*time.Minute)) {
			t.Error("the idle timeout")
		}
		if err := sessions.Touch(ctx, a, now.Add(25*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if !active(a, now.Add(50*time.Minute)) {
			t.Error("a touched session ended")
		}
		if err := sessions.Touch(ctx, a, now.Add(12*time.Hour-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if active(a, now.Add(12*time.Hour)) {
			t.Error("a session outlived its absolute end")
		}
		b, c := start(), start()
		if err := sessions.End(ctx, b, now); err != nil {
			t.Fatal(err)
		}
		if active(b, now) || !active(c, now) {
			t.Error("End")
		}
		old := credential
		if credential, err = users.SetPassword(ctx, m.ID, dev.ID, old, "a new password!!", now); err != nil {
			t.Fatal(err)
		}
		if active(c, now) {
			t.Error("a session survived a password change")
		}
		// A sign-in that checked the old password, and a second change
		// from it, both came too late.
		if err := sessions.Start(ctx, team.Session{JTI: uuid.NewString(), UserID: dev.ID, MerchantID: m.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}, old); !errors.Is(err, team.ErrNotFound) {
			t.Errorf("a session started on the old password: %v", err)
		}
		if _, err := users.SetPassword(ctx, m.ID, dev.ID, old, "yet another one!", now); !errors.Is(err, team.ErrPasswordChanged) {
			t.Errorf("a second change from the old password: %v", err)
		}
		if credential != signIn("a new password!!") {
			t.Error("the credential SetPassword returned is not the one a sign-in checks")
		}
		// Prune drops ended sessions only: a, b and c (the password change
		// ended a and c).
		live := start()
		if n, err := sessions.Prune(ctx, now.Add(time.Second)); err != nil || n != 3 {
			t.Errorf("prune: %d rows, %v", n, err)
		}
		if !active(live, now) {
			t.Error("prune ended a live session")
		}
		d := start()
		if err := users.Remove(ctx, m.ID, dev.ID); err != nil {
			t.Fatal(err)
		}
		if active(d, now) {
			t.Error("a session survived its user's removal")
		}
		if active("no-such-jti", now) {
			t.Error("an unknown jti is active")
		}
		// A sign-in that checked the password of a user removed meanwhile
		// starts nothing (it was a foreign-key error, a 500, on PostgreSQL).
		if err := sessions.Start(ctx, team.Session{JTI: uuid.NewString(), UserID: dev.ID, MerchantID: m.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}, credential); !errors.Is(err, team.ErrNotFound) {
			t.Errorf("a session of a removed user: %v", err)
		}

		s1, err := sessions.SessionSecret(ctx)
		if err != nil || len(s1) != 32 {
			t.Fatalf("secret: %d bytes, %v", len(s1), err)
		}
		if s2, _ := sessions.SessionSecret(ctx); string(s2) != string(s1) {
			t.Error("the secret changed between calls")
		}
	})
}

func TestAuditLogStore(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		merchants := store.NewMerchants(db)
		m, _ := merchants.Create(ctx, "Shop", "owner@shop.td", "correct horse battery", now)
		other, _ := merchants.Create(ctx, "Other", "owner@other.td", "correct horse battery", now)
		log := store.NewAuditLog(db)
		for i := range 5 {
			if err := log.Append(ctx, team.AuditEntry{MerchantID: m.ID, Email: "owner@shop.td", Action: "test", Target: string(rune('a' + i)),
				Address: "127.0.0.1", At: now.Add(time.Duration(i/2) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		log.Append(ctx, team.AuditEntry{MerchantID: other.ID, Email: "x", Action: "test", Target: "other", At: now})
		var seen []string
		var before time.Time
		var beforeID string
		for range 4 {
			page, err := log.List(ctx, m.ID, before, beforeID, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				seen = append(seen, e.Target)
			}
			if len(page) < 2 {
				break
			}
			before, beforeID = page[len(page)-1].At, page[len(page)-1].ID
		}
		distinct := map[string]bool{}
		for _, s := range seen {
			distinct[s] = true
		}
		if len(seen) != 5 || len(distinct) != 5 || seen[0] != "e" {
			t.Errorf("pages: %v, want the 5 entries newest first", seen)
		}
		for _, s := range seen {
			if s == "other" {
				t.Error("another merchant's entry")
			}
		}
	})
}

// TestSignInRacesPasswordChange starts a session on the password just
// checked while the password is changed, many times at once: a session
// that started must have ended by the time the change returned, and of
// two changes from one password only one applies. Without the row lock
// (PostgreSQL), the sign-in read the old password before the change
// committed and inserted its session after the change had ended the
// others: it outlived the change.
func TestSignInRacesPasswordChange(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, m, now := t.Context(), shop(t, db), shopDay
		users, sessions := store.NewUsers(db), store.NewSessions(db)
		u, err := users.CheckPassword(ctx, "owner@shop.td", "correct horse battery", false)
		if err != nil || u == nil {
			t.Fatal(u, err)
		}
		credential := u.Credential
		for round := range 20 {
			jti := uuid.NewString()
			var started, changed, changedToo error
			var wg sync.WaitGroup
			wg.Go(func() {
				started = sessions.Start(ctx, team.Session{JTI: jti, UserID: u.ID, MerchantID: m.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}, credential)
			})
			var next, nextToo string
			wg.Go(func() {
				next, changed = users.SetPassword(ctx, m.ID, u.ID, credential, fmt.Sprintf("new password %d", round), now)
			})
			wg.Go(func() {
				nextToo, changedToo = users.SetPassword(ctx, m.ID, u.ID, credential, fmt.Sprintf("other password %d", round), now)
			})
			wg.Wait()
			if started != nil && !errors.Is(started, team.ErrNotFound) {
				t.Fatalf("round %d: start: %v", round, started)
			}
			if started == nil {
				if _, _, err := sessions.Active(ctx, jti, now, now.Add(-time.Minute)); !errors.Is(err, team.ErrNotFound) {
					t.Errorf("round %d: a session started on the old password outlived the change (%v)", round, err)
				}
			}
			switch {
			case changed == nil && errors.Is(changedToo, team.ErrPasswordChanged):
				credential = next
			case changedToo == nil && errors.Is(changed, team.ErrPasswordChanged):
				credential = nextToo
			default:
				t.Fatalf("round %d: two changes from one password answered %v and %v, want one done and one refused", round, changed, changedToo)
			}
		}
	})
}

// TestPasswordChecksBounded: bcrypt runs in a bounded number of slots.
// While a flood holds them all, a sign-in's check waits its turn instead
// of adding to the CPU; if its context ends first, its error is the
// context's (a dashboard request answers it 503, as when the database is
// slow), never a wrong password. Once a slot is free, the same check is
// answered. (Not parallel: it holds the process's slots.)
func TestPasswordChecksBounded(t *testing.T) {
	db := open(t, "sqlite")
	ctx := t.Context()
	users := store.NewUsers(db)
	if _, err := store.NewMerchants(db).Create(ctx, "Shop", "owner@shop.td", "correct horse battery", time.Now()); err != nil {
		t.Fatal(err)
	}
	release := store.HoldPasswordSlots()
	waiting, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	u, err := users.CheckPassword(waiting, "owner@shop.td", "correct horse battery", false)
	if u != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a check while every slot is taken: user %v, %v; want it to wait until its context ends", u != nil, err)
	}
	done := make(chan *team.User, 1)
	go func() {
		u, _ := users.CheckPassword(ctx, "owner@shop.td", "correct horse battery", false)
		done <- u
	}()
	select {
	case <-done:
		t.Fatal("a check ran while every slot was taken")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if u := <-done; u == nil || u.Email != "owner@shop.td" {
		t.Errorf("the check once a slot is free: %v", u)
	}
}
