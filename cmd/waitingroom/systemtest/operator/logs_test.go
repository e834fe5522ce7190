package operator

import (
	"net/http"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestLogsHoldNoSecrets runs a full flow with the server logging at debug
// level and searches everything it logged for passwords, tokens and query
// strings.
func TestLogsHoldNoSecrets(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "1"})
	const secretPassword = "S3cr3t-Hunter2-zq"
	systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": secretPassword})
	access := in.Login(systemtest.User(1))
	qt := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access, nil).Str("queueToken")
	var entry string
	systemtest.WaitFor(t, "READY", func() bool {
		p := in.Position("default", qt)
		entry = p.Str("entryToken")
		return entry != ""
	})
	// A stream with the token in the query, refused and accepted requests,
	// a failing order and a good one.
	res, err := http.Get(in.Base + "/api/v1/rooms/default/events?token=" + qt)
	if err == nil {
		res.Body.Close()
	}
	systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/other/position?token="+qt, qt, nil)
	systemtest.Do(t, "POST", in.Base+"/api/v1/orders", qt, map[string]int{"productId": 1, "quantity": 1}, "X-Entry-Token", "forged-"+entry)
	systemtest.Do(t, "POST", in.Base+"/api/v1/orders", qt, map[string]int{"productId": 1, "quantity": 1}, "X-Entry-Token", entry)
	systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", qt, nil)
	in.Stop()

	logs := in.Logs.String()
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
