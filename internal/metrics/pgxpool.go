package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// ObservePgxPool exports a pgx pool's statistics as the go_sql_* series
// ObservePool gives a database/sql pool, with the same names and meanings,
// so one dashboard reads both engines. On PostgreSQL database/sql runs
// over a pgx pool (store.DB.Pool), and database/sql's own figures are
// empty: every connection, and every wait for one, is the pgx pool's.
func (m *Metrics) ObservePgxPool(name string, pool *pgxpool.Pool) {
	m.registry.MustRegister(newPgxPoolCollector(name, pool))
}

type pgxPoolCollector struct {
	pool                                 *pgxpool.Pool
	maxOpen, open, inUse, idle           *prometheus.Desc
	waitCount, waitSeconds               *prometheus.Desc
	maxIdleTimeClosed, maxLifetimeClosed *prometheus.Desc
}

func newPgxPoolCollector(name string, pool *pgxpool.Pool) *pgxPoolCollector {
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("go_sql_"+metric, help, nil, prometheus.Labels{"db_name": name})
	}
	return &pgxPoolCollector{
		pool:              pool,
		maxOpen:           desc("max_open_connections", "Maximum number of open connections to the database."),
		open:              desc("open_connections", "The number of established connections both in use and idle."),
		inUse:             desc("in_use_connections", "The number of connections currently in use."),
		idle:              desc("idle_connections", "The number of idle connections."),
		waitCount:         desc("wait_count_total", "The total number of connections waited for."),
		waitSeconds:       desc("wait_duration_seconds_total", "The total time blocked waiting for a new connection."),
		maxIdleTimeClosed: desc("max_idle_time_closed_total", "The total number of connections closed for having been idle too long."),
		maxLifetimeClosed: desc("max_lifetime_closed_total", "The total number of connections closed at the end of their lifetime."),
	}
}

func (c *pgxPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *pgxPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.maxOpen, float64(s.MaxConns()))
	gauge(c.open, float64(s.TotalConns()))
	gauge(c.inUse, float64(s.AcquiredConns()))
	gauge(c.idle, float64(s.IdleConns()))
	// An acquire that found no idle connection waited for one to be given
	// back or made. database/sql's WaitCount counts only the first kind; a
	// pool that reconnects after a database restart counts the second.
	counter(c.waitCount, float64(s.EmptyAcquireCount()))
	counter(c.waitSeconds, s.EmptyAcquireWaitTime().Seconds())
	counter(c.maxIdleTimeClosed, float64(s.MaxIdleDestroyCount()))
	counter(c.maxLifetimeClosed, float64(s.MaxLifetimeDestroyCount()))
}
