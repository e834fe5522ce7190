package systemtest

import (
	"net/http"
	"testing"

	"waitingroom/server/gateway"
	"waitingroom/server/pass"
)

// ForwardAuthInstance starts a forward-auth instance on Redis alone
// protecting the README's routes for room "sale", with no proof of work.
func ForwardAuthInstance(t *testing.T, vars map[string]string) *Instance {
	t.Helper()
	v := map[string]string{"WR_FORWARD_AUTH": "on", "WR_TRUSTED_PROXIES": "127.0.0.1",
		"WR_PROTECT": "POST /api/orders=sale, GET /checkout/*=sale", "WR_PASS_KEY": pass.GenerateKey(),
		"WR_ROOMS": "sale", "WR_ADMIT_INTERVAL": "20ms", "WR_GATEWAY_CHALLENGE": "off"}
	for k, val := range vars {
		v[k] = val
	}
	return NewRedisOnlyEnv(t).Start(v)
}

// Ask asks in's /_wr/auth about method and uri the way nginx does
// (X-Original-*) or Caddy does (X-Forwarded-*), with c's cookies for the
// site.
func Ask(t *testing.T, in *Instance, c *http.Client, nginx bool, method, uri string, headers ...string) (int, http.Header, map[string]any) {
	t.Helper()
	h := []string{"X-Forwarded-Method", method, "X-Forwarded-Uri", uri}
	if nginx {
		h = []string{"X-Original-Method", method, "X-Original-URI", uri}
	}
	return Call(t, c, "GET", in.Base+gateway.AuthPath, "", append(h, headers...)...)
}
