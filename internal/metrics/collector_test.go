package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/metrics"
)

// TestScrapesShareAHungReading: scrapes that come while the database is
// being read, here one that does not answer, wait for that one reading
// and share its failure (momopay_database_up 0) rather than each reading
// in turn, which made two scrapers wait twice the read's bound. A later
// scrape reads again, as a failed reading is not kept.
func TestScrapesShareAHungReading(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	started := make(chan struct{}, 10)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(metrics.Sources{
		Pending: func(ctx context.Context, _ time.Time) (int64, int64, error) {
			reads.Add(1)
			started <- struct{}{}
			<-ctx.Done() // the database does not answer
			return 0, 0, ctx.Err()
		},
		Undelivered: func(context.Context) (int64, error) { return 0, nil },
		Jobs:        func(context.Context, time.Time) ([]jobs.QueueStats, error) { return nil, nil },
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	up := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Error(err)
		}
		for _, f := range families {
			if f.GetName() == "momopay_database_up" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Error("no momopay_database_up")
		return -1
	}
	var wg sync.WaitGroup
	ups := make([]float64, 3)
	wg.Go(func() { ups[0] = up() })
	<-started
	for i := 1; i < 3; i++ {
		wg.Go(func() { ups[i] = up() })
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("three scrapes during one reading read the database %d times, want once", n)
	}
	for i, v := range ups {
		if v != 0 {
			t.Errorf("scrape %d: momopay_database_up %v, want 0", i, v)
		}
	}
	up()
	if n := reads.Load(); n != 2 {
		t.Errorf("a scrape after the failed reading: %d readings in all, want 2", n)
	}
}
