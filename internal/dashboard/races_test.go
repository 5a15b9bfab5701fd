package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/momopay/momopay/internal/team"
)

// TestRaceLosersAreToldWhatHappened: two owners, each in two tabs, revoke
// the same key, delete the same endpoint and remove the same user at the
// same moment. One request does it and is told so; every other is told it
// was done already, never "revoked" for a change it did not make and never
// the general "not found" (a removed user is deleted, so the losers of a
// removal are told that the user is not on the team, 404, with the way
// back to it); the audit log has one entry per change.
func TestRaceLosersAreToldWhatHappened(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		first := b.login(b.owner.Email)
		second := b.login(b.addUser(b.s.MerchantID, "second@example.td", team.Owner).Email)
		var tabs []*browser
		for _, br := range []*browser{first, second} {
			for range 2 {
				tab := *br // a tab of that browser: its session, its own flash cookies
				tab.others = maps.Clone(br.others)
				tabs = append(tabs, &tab)
			}
		}
		// all POSTs path from every tab at once and returns the answers.
		all := func(path string) []answer {
			answers, errs := make([]answer, len(tabs)), make([]error, len(tabs))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, tab := range tabs {
				req, err := http.NewRequest("POST", tab.base+path, strings.NewReader(""))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				wg.Go(func() {
					<-start
					answers[i], errs[i] = tab.send(req)
				})
			}
			close(start)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			return answers
		}
		// oneWinner checks that one answer is the change's redirect and
		// every other the page saying it was made already, with status
		// lost.
		oneWinner := func(what string, answers []answer, lost int, already string) {
			t.Helper()
			won := 0
			for _, a := range answers {
				switch {
				case a.status == http.StatusSeeOther:
					won++
				case a.status != lost || !strings.Contains(a.body, already):
					t.Errorf("%s: a loser got %d, want %d %q", what, a.status, lost, already)
				}
			}
			if won != 1 {
				t.Errorf("%s: %d requests were told they made the change, want 1", what, won)
			}
		}
		const rounds = 5
		for round := range rounds {
			before := keyIDs(t, b, b.s.MerchantID)
			if r := first.postForm("/keys", nil); r.status != http.StatusCreated {
				t.Fatalf("create a key: %d", r.status)
			}
			var keyID string
			for _, id := range keyIDs(t, b, b.s.MerchantID) {
				if !slices.Contains(before, id) {
					keyID = id
				}
			}
			oneWinner("revoke", all("/keys/"+keyID+"/revoke"), http.StatusOK, "This key is already revoked")

			e, err := b.s.App.Webhooks.CreateEndpoint(ctx, b.s.MerchantID, fmt.Sprintf("http://127.0.0.1:9/hook%d", round))
			if err != nil {
				t.Fatal(err)
			}
			oneWinner("delete", all("/webhooks/"+e.ID+"/delete"), http.StatusOK, "This endpoint is already deleted")

			u := b.addUser(b.s.MerchantID, fmt.Sprintf("leaver%d@example.td", round), team.Viewer)
			oneWinner("remove", all("/team/"+u.ID+"/remove"), http.StatusNotFound, "This user is not on your team")
			// Later, the back button's confirmation says the same and
			// leads to the team.
			if r := first.get("/team/" + u.ID + "/remove"); r.status != http.StatusNotFound ||
				!strings.Contains(r.body, "This user is not on your team") || !strings.Contains(r.body, `href="/team"`) {
				t.Errorf("a removed user's confirmation: %d\n%s", r.status, r.body)
			}
		}
		for _, action := range []string{team.ActionKeyRevoked, team.ActionEndpointDeleted, team.ActionUserRemoved} {
			var n int
			if err := b.s.App.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_log WHERE merchant_id = $1 AND action = $2`, b.s.MerchantID, action).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != rounds {
				t.Errorf("%d %s entries in the audit log, want %d", n, action, rounds)
			}
		}
	})
}
