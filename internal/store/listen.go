package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen keeps a PostgreSQL connection of its own LISTENing on channel until
// ctx ends, and calls heard with the payload of each notification. A
// notification sent while no connection listens is lost, so up is called
// with true each time a connection starts listening (the caller catches up
// on what it may have missed) and with false each time one is lost (the
// caller stops trusting that it hears everything). A lost connection is
// replaced with a backoff of up to 5 s, logged at WARN with what.
// It returns at once on SQLite, which has no notifications.
func (db *DB) Listen(ctx context.Context, channel, what string, log *slog.Logger, up func(bool), heard func(payload string)) {
	if db.Dialect != Postgres {
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		connected, err := db.listenOnce(ctx, channel, up, heard)
		if connected {
			up(false)
			backoff = 100 * time.Millisecond // a new outage starts its backoff afresh
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn(what+" lost its database connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce runs one connection of Listen and reports whether it got as
// far as listening.
func (db *DB) listenOnce(ctx context.Context, channel string, up func(bool), heard func(string)) (connected bool, err error) {
	conf, err := pgConnConfig(db.pgTarget)
	if err != nil {
		return false, err
	}
	conn, err := pgx.ConnectConfig(ctx, conf)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, err
	}
	up(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Channel == channel {
			heard(n.Payload)
		}
	}
}
