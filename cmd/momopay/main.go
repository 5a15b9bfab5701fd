// Command momopay runs the momopay payment service and its administration
// commands. See the README, or run "momopay help".
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/payment"
)

func main() {
	// The service keeps time in UTC, whatever TZ the machine has (the
	// dashboard shows N'Djamena time explicitly). It matters beyond the
	// logs: River stores a snoozed job's next time in SQLite as
	// time.Time.String() in the local zone and compares it as text with a
	// UTC "now", so on a machine set to Chad's time (UTC+1) every status
	// poll after the first waited an hour. Set before anything runs.
	time.Local = time.UTC
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "momopay:", errorText(err))
		os.Exit(1)
	}
}

// errorText is what a person reads: a domain error's message and its bad
// fields not already in the message, without the internal code that payment.Error.Error() puts first
// for logs ("unprocessable: ...").
func errorText(err error) string {
	e, ok := errors.AsType[*payment.Error](err)
	if !ok || e.Code == payment.EINTERNAL {
		return err.Error()
	}
	var b strings.Builder
	b.WriteString(e.Message)
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		msg := e.Fields[k]
		if strings.Contains(e.Message, msg) { // some messages already say it
			continue
		}
		if !strings.HasPrefix(msg, k+" ") { // and some name their field
			msg = k + " " + msg
		}
		b.WriteString("; " + msg)
	}
	return b.String()
}
