package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// QueueStats is what waits in one River queue.
type QueueStats struct {
	Queue string
	// ByState counts the queue's unfinished jobs: available, running,
	// retryable and scheduled.
	ByState map[string]int64
	// OldestDue is how long the oldest job that is due (available, or
	// retryable or scheduled past its time) has waited; 0 when none is.
	OldestDue time.Duration
}

// unfinished are the states of jobs still to run. Finished ones (completed,
// cancelled, discarded) are kept by River for a day and are not read: every
// query filters on state, the first column of River's fetching index
// (state, queue, priority, scheduled_at, id), so it reads the waiting jobs
// only, never the whole table.
const unfinished = `('available', 'running', 'retryable', 'scheduled')`

// Stats returns each queue's depth and the age of its oldest due job, as of
// now (River's own clock is the wall clock). Queues with nothing waiting
// are listed with zeros.
func Stats(ctx context.Context, db *sql.DB, sqlite bool, now time.Time) ([]QueueStats, error) {
	byQueue := map[string]*QueueStats{}
	out := []*QueueStats{}
	get := func(q string) *QueueStats {
		s := byQueue[q]
		if s == nil {
			s = &QueueStats{Queue: q, ByState: map[string]int64{"available": 0, "running": 0, "retryable": 0, "scheduled": 0}}
			byQueue[q] = s
			out = append(out, s)
		}
		return s
	}
	get(QueuePayments)
	rows, err := db.QueryContext(ctx, `SELECT queue, state, COUNT(*) FROM river_job
		WHERE state IN `+unfinished+` GROUP BY queue, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var q, state string
		var n int64
		if err := rows.Scan(&q, &state, &n); err != nil {
			return nil, err
		}
		get(q).ByState[state] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// River writes SQLite times as text in this layout, UTC.
	var cutoff any = now.UTC()
	if sqlite {
		cutoff = now.UTC().Format(riverSQLiteTime)
	}
	due, err := db.QueryContext(ctx, `SELECT queue, MIN(scheduled_at) FROM river_job
		WHERE state IN ('available', 'retryable', 'scheduled') AND scheduled_at <= $1 GROUP BY queue`, cutoff)
	if err != nil {
		return nil, err
	}
	defer due.Close()
	for due.Next() {
		var q string
		var oldest any
		if err := due.Scan(&q, &oldest); err != nil {
			return nil, err
		}
		at, err := riverTime(oldest)
		if err != nil {
			return nil, err
		}
		get(q).OldestDue = max(now.Sub(at), 0)
	}
	if err := due.Err(); err != nil {
		return nil, err
	}
	stats := make([]QueueStats, len(out))
	for i, s := range out {
		stats[i] = *s
	}
	return stats, nil
}

const riverSQLiteTime = "2006-01-02 15:04:05.999"

// riverTime reads a River time as the driver returns it. On SQLite River
// writes most times in riverSQLiteTime, but the ones it passes as
// time.Time parameters (a snoozed job's scheduled_at, finalized_at) the
// driver writes as time.Time.String(), monotonic reading included:
// "2026-11-26 12:55:58.202204656 +0000 UTC m=+457.036472754".
func riverTime(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v, nil
	case []byte:
		return riverTime(string(v))
	case string:
		text, _, _ := strings.Cut(v, " m=")
		for _, layout := range []string{riverSQLiteTime, time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999 -0700 MST"} {
			if t, err := time.Parse(layout, text); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("unreadable river_job.scheduled_at %v (%T)", v, v)
}
