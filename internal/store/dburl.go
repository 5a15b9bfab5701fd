package store

import (
	"errors"
	"fmt"
	neturl "net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgKeywords are the libpq connection parameters a key=value connection
// string starts with; pgx accepts the same form.
var pgKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "passfile": true, "sslmode": true, "sslcert": true, "sslkey": true,
	"sslrootcert": true, "sslpassword": true, "sslsni": true, "connect_timeout": true,
	"application_name": true, "target_session_attrs": true, "service": true,
	"servicefile": true, "options": true, "search_path": true, "channel_binding": true,
}

var (
	urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)
	kvPair    = regexp.MustCompile(`^\s*([A-Za-z_]+)\s*=`)
)

// ParseURL tells which engine a database address names and returns what
// that engine's driver takes: for PostgreSQL a postgres:// or postgresql://
// URL, or a libpq key=value string ("host=127.0.0.1 user=postgres
// dbname=momopay"); for SQLite a file path, optionally written sqlite:PATH.
// Anything else that looks like a URL or a key=value string is refused
// rather than taken as a strange file name.
func ParseURL(url string) (Dialect, string, error) {
	if m := urlScheme.FindStringSubmatch(url); m != nil {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			if strings.Count(url, "@") > 1 || strings.Contains(url, "#") {
				// Read as a URL, the password's end would land in the host
				// or the database name, and from there in error messages.
				return "", "", fmt.Errorf("PostgreSQL URL %s: percent-encode @, / and # in the user name and password (%%40, %%2F, %%23), or use host=... password=... instead", Redact(url))
			}
			return Postgres, url, nil
		case "sqlite", "sqlite3", "file":
			path := url[len(m[0]):]
			if path == "" {
				return "", "", fmt.Errorf("empty SQLite path in %q", url)
			}
			return SQLite, path, nil
		}
		return "", "", fmt.Errorf("unsupported database URL scheme %q in --db: use a SQLite file path, sqlite:PATH, postgres://USER@HOST:5432/DB or host=HOST user=USER dbname=DB", m[1])
	}
	if m := kvPair.FindStringSubmatch(url); m != nil {
		if !pgKeywords[strings.ToLower(m[1])] {
			return "", "", fmt.Errorf("database %q looks like a key=value connection string, but %q is not a PostgreSQL parameter (host, port, dbname, user, ...); for a SQLite file whose name has \"=\" in it, write sqlite:PATH", Redact(url), m[1])
		}
		return Postgres, url, nil
	}
	for _, prefix := range []string{"sqlite:", "sqlite3:", "file:"} {
		if len(url) >= len(prefix) && strings.EqualFold(url[:len(prefix)], prefix) {
			url = url[len(prefix):]
			break
		}
	}
	if strings.TrimSpace(url) == "" {
		return "", "", errors.New("empty database address: pass --db with a SQLite path or a PostgreSQL URL")
	}
	return SQLite, url, nil
}

// Durable returns url asking SQLite to sync every commit to disk
// (synchronous=FULL), so that a payment acknowledged survives a power cut;
// live mode uses it. WAL with synchronous=NORMAL, the default here, can
// lose the last commits on a power cut (never corrupts). PostgreSQL URLs
// are returned as they are: it is durable by default.
func Durable(url string) string {
	if dialect, _, err := ParseURL(url); err != nil || dialect != SQLite {
		return url
	}
	if strings.Contains(url, "?") {
		return url + "&_pragma=synchronous(FULL)"
	}
	return url + "?_pragma=synchronous(FULL)"
}

// Redact hides the passwords of a database or Redis address, for
// messages: the one in the user part, and those given as parameters of
// the query string (?password=..., ?sslpassword=..., which libpq and pgx
// read as well) or of a key=value string. A URL that does not parse as
// one (a password holding an unescaped '#', '/' or '@', a space in the
// host, a bad port) still has its whole user part hidden: everything
// between "://" and the last '@'.
func Redact(dsn string) string {
	if u, err := neturl.Parse(dsn); err == nil && u.Scheme != "" && strings.Count(dsn, "@") <= 1 {
		u.RawQuery = redactQuery(u.RawQuery)
		return u.Redacted()
	}
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = "xxxxx" + rest[at:]
		}
		if before, query, ok := strings.Cut(rest, "?"); ok {
			rest = before + "?" + redactQuery(query)
		}
		return scheme + "://" + rest
	}
	return pgPassword.ReplaceAllString(dsn, "password=xxxxx")
}

// unquoted is err without the connection string pgx quotes when it cannot
// parse one ("cannot parse `postgres://...`: sslmode is invalid"). pgx
// hides a password in the user part and in key=value form, but not one
// given as a URL parameter (?password=, ?sslpassword=); the callers name
// the string themselves, through Redact. The error still unwraps to
// pgx's, for errors.As.
func unquoted(err error) error {
	var parse *pgconn.ParseConfigError
	if !errors.As(err, &parse) {
		return err
	}
	msg := err.Error()
	start := strings.Index(msg, "cannot parse `")
	end := strings.LastIndex(msg, "`: ")
	if start < 0 || end < start {
		return &scrubbed{msg: "the connection string cannot be parsed", err: err}
	}
	return &scrubbed{msg: msg[:start] + "cannot parse it: " + msg[end+len("`: "):], err: err}
}

// scrubbed is an error shown with another message than the one it wraps.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// pgPassword is a password in a key=value string; it matches sslpassword
// too.
var pgPassword = regexp.MustCompile(`password\s*=\s*('(\\.|[^'])*'|\S+)`)

// redactQuery hides the value of every query parameter whose name, once
// unescaped, holds "password", keeping the rest of the query as written.
func redactQuery(query string) string {
	if query == "" {
		return query
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		key, _, ok := strings.Cut(p, "=")
		if name, err := neturl.QueryUnescape(key); ok && (err != nil || strings.Contains(strings.ToLower(name), "password")) {
			params[i] = key + "=xxxxx"
		}
	}
	return strings.Join(params, "&")
}
