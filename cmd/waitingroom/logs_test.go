package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestLogsHoldNoSecrets runs a full flow with the server logging at debug
// level and searches everything it logged for passwords, tokens and query
// strings.
func TestLogsHoldNoSecrets(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "1"})
	const secretPassword = "S3cr3t-Hunter2-zq"
	do(t, "POST", in.base+"/api/v1/auth/login", "", map[string]string{"loginId": user(1), "password": secretPassword})
	access := in.login(user(1))
	qt := do(t, "POST", in.base+"/api/v1/rooms/default/enter", access, nil).str("queueToken")
	var entry string
	waitFor(t, "READY", func() bool {
		p := in.position("default", qt)
		entry = p.str("entryToken")
		return entry != ""
	})
	// A stream with the token in the query, refused and accepted requests,
	// a failing order and a good one.
	res, err := http.Get(in.base + "/api/v1/rooms/default/events?token=" + qt)
	if err == nil {
		res.Body.Close()
	}
	do(t, "GET", in.base+"/api/v1/rooms/other/position?token="+qt, qt, nil)
	do(t, "POST", in.base+"/api/v1/orders", qt, map[string]int{"productId": 1, "quantity": 1}, "X-Entry-Token", "forged-"+entry)
	do(t, "POST", in.base+"/api/v1/orders", qt, map[string]int{"productId": 1, "quantity": 1}, "X-Entry-Token", entry)
	do(t, "POST", in.base+"/api/v1/rooms/default/leave", qt, nil)
	in.stop()

	logs := in.logs.String()
	if logs == "" {
		t.Fatal("nothing was logged: the test would prove nothing")
	}
	for what, secret := range map[string]string{
		"password": secretPassword, "access token": access, "queue token": qt, "entry token": entry,
		"a query string": "token=", "a JWT": "eyJ",
	} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains %s", what)
		}
	}
}
