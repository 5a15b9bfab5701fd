package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/api"
)

// DefaultShutdownGrace is how long a stopping serve lets the requests it
// accepted, and the jobs and webhook attempts it runs, finish. It covers
// the longest of them (a webhook attempt waits up to 10 s for its
// receiver, a status enquiry up to 10 s for the operator), and stays under
// the 30 s that supervisors commonly wait before they kill (systemd's and
// Kubernetes' defaults).
const DefaultShutdownGrace = 25 * time.Second

// handBackTimeout is how long jobs cancelled at the end of the grace get to
// return, so that River records each as failed and due again (another
// instance, or this one once restarted, runs it). Jobs that do not return
// even then stay "running" until River's rescuer or the sweeper takes them
// back, as after a crash. (A cancelled webhook attempt records itself as
// interrupted and gives its delivery back at once, within its own bound.)
const handBackTimeout = 5 * time.Second

// answerMargin is how long before the end of the grace the requests still
// waiting (for a database that cannot write, say) are told to give up:
// enough for one in SQLite's 5 s busy wait to end and answer 503, so that
// none is cut off without an answer.
const answerMargin = 6 * time.Second

// drain stops serving once Serve's context has ended: the listener closes
// at once (a new connection is refused, for a load balancer to try another
// instance), while the requests already accepted are answered and the
// running jobs finish, both within the grace. Requests still waiting
// answerMargin before its end are ended (endRequests, with
// api.ErrStopping: a 503 with retry_after, nothing written); what runs
// past the grace is cut off, and jobs still running are cancelled and
// handed back.
func (a *App) drain(srv *http.Server, stopSweep func(), endRequests context.CancelCauseFunc) {
	grace := a.cfg.ShutdownGrace
	if grace == 0 {
		grace = DefaultShutdownGrace
	}
	log := a.cfg.Logger
	start := time.Now()
	log.Info("stopping: refusing new connections, finishing accepted requests and running jobs", "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	end := time.AfterFunc(max(grace-answerMargin, grace/2), func() { endRequests(api.ErrStopping) })
	defer end.Stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("requests still running at the end of the shutdown grace were cut off", "grace", grace.String())
			srv.Close()
		}
	})
	wg.Go(stopSweep)
	wg.Go(func() {
		if err := a.dispatcher.Stop(ctx); err != nil {
			log.Warn("webhook attempts still running at the end of the shutdown grace were cancelled and recorded as interrupted", "grace", grace.String())
		}
	})
	wg.Go(func() {
		if err := a.Jobs.Stop(ctx); err == nil {
			return
		}
		log.Warn("jobs still running at the end of the shutdown grace are cancelled and handed back", "grace", grace.String())
		hand, cancel := context.WithTimeout(context.Background(), handBackTimeout)
		defer cancel()
		if err := a.Jobs.StopAndCancel(hand); err != nil {
			log.Warn("jobs that did not return once cancelled stay held until another instance or the next start rescues them", "err", err.Error())
		}
	})
	wg.Wait()
	log.Info("stopped", "took", time.Since(start).Round(time.Millisecond).String())
}
