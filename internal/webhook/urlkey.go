package webhook

import (
	"net/url"
	"strings"
)

// URLKey is raw in the form two endpoint URLs are compared in, so that one
// receiver is not registered twice under two spellings: scheme and host in
// lower case (they are case-insensitive), a trailing dot of the host and
// the scheme's default port dropped, and an empty path written "/" (what is
// sent for it). The path and query are kept as they are: a receiver may
// tell them apart by case. raw must have passed ValidateURL.
func URLKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if port != "" {
		host += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	key := scheme + "://" + host + path
	if u.RawQuery != "" || u.ForceQuery {
		key += "?" + u.RawQuery
	}
	return key
}
