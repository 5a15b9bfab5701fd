package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen keeps a PostgreSQL connection of its own LISTENing on channel until
// ctx ends, and calls heard with the payload of each notification. A
// notification sent while no connection listens is lost, so up is called
// with true each time a connection starts listening (the caller catches up
// on what it may have missed) and with false each time one is lost (the
// caller stops trusting that it hears everything). A lost connection, or
// one that stops answering (listenQuiet), is replaced with a backoff of up
// to 5 s, logged at WARN with what.
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
		wait, cancel := context.WithTimeout(ctx, listenQuiet)
		n, err := conn.WaitForNotification(wait)
		cancel()
		if n != nil && n.Channel == channel {
			heard(n.Payload)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return true, err
		}
		// Nothing heard for listenQuiet: a connection that hangs without
		// dropping (a stalled proxy or middlebox) would otherwise be
		// trusted for ever, its notifications lost. pgx keeps the
		// connection after a wait's timeout.
		ping, cancel := context.WithTimeout(ctx, listenPingTimeout)
		err = conn.Ping(ping)
		cancel()
		if err != nil {
			return true, fmt.Errorf("the connection did not answer a ping within %s: %w", listenPingTimeout, err)
		}
	}
}

// A listening connection quiet for listenQuiet is pinged, and replaced
// (as a lost one is: up(false) first) when the ping is not answered
// within listenPingTimeout. So a connection that hangs is found within
// about 4 s; one that drops is found at once.
const (
	listenQuiet       = 2 * time.Second
	listenPingTimeout = 2 * time.Second
)
