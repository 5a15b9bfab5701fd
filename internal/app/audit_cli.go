package app

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/momopay/momopay/internal/team"
)

// auditAddress is what the audit log's address column says of a change
// made from the command line: it came from no network client.
const auditAddress = "command line"

// audit records a change a command made to a merchant's account in that
// merchant's audit log, as the dashboard records its own: the people who
// run the service reach keys, users, webhooks and refunds too, and the
// merchant's owners should see that beside their team's actions. Who is the
// operating-system user and the host that ran the command. The change is
// already made when this runs, so a failure to record is reported on
// stderr, and the command still succeeds.
func (c *cli) audit(ctx context.Context, a *App, merchantID, action, target string) {
	e := team.AuditEntry{MerchantID: merchantID, Email: c.operatorName(), Action: action, Target: target,
		Address: auditAddress, At: time.Now()}
	if err := a.AuditLog.Append(context.WithoutCancel(ctx), e); err != nil {
		fmt.Fprintf(c.stderr, "warning: the change is made, but it could not be recorded in the merchant's audit log: %v\n", err)
	}
}

// operatorName names who ran this command in the audit log's "who"
// column: "command line: " and operatorWho.
func (c *cli) operatorName() string {
	return "command line: " + c.operatorWho()
}

// operatorWho is the user and the host that ran this command
// ("amina@ops-1"): $USER, else $LOGNAME, else the system's account of
// the process (cron, systemd and docker exec often set neither).
func (c *cli) operatorWho() string {
	who := or(c.getenv("USER"), c.getenv("LOGNAME"))
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
	}
	who = or(who, "unknown user")
	if host, err := os.Hostname(); err == nil && host != "" {
		who += "@" + host
	}
	return who
}
