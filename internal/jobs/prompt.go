package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// schedulerLookAhead is how far ahead River's scheduler makes scheduled jobs
// available on each pass (its interval, JobSchedulerIntervalDefault, 5 s):
// such a job keeps its scheduled_at, and the fetch starts it at that
// instant.
const schedulerLookAhead = 5 * time.Second

// promptStart inserts a job due within schedulerLookAhead as available
// (with its scheduled_at kept) instead of scheduled. River inserts any job
// given a ScheduledAt as scheduled, even one due now, and only the next
// scheduler pass (every 5 s) releases it: a first poll due 3 s after
// creation started 3 to 5 s after it, and a first webhook attempt due at
// once waited up to 5 s. This is what the scheduler itself does with such a
// job one pass later, and what River does with a short snooze.
type promptStart struct{ river.MiddlewareDefaults }

// InsertMany implements rivertype.JobInsertMiddleware.
func (promptStart) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, insert func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	horizon := time.Now().Add(schedulerLookAhead)
	for _, p := range params {
		if p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil && p.ScheduledAt.Before(horizon) {
			p.State = rivertype.JobStateAvailable
		}
	}
	return insert(ctx)
}
