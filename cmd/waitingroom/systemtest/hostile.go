package systemtest

// Tests of what one hostile client can do to others: lock accounts, forge
// cross-site requests, pass bad input for an outage, waste a token on a
// typo, and go unseen. Distinct client addresses come from X-Real-IP sent
// by the test client, which WR_TRUSTED_PROXIES=127.0.0.1 makes the server
// believe.

// BehindProxy are the variables that let tests speak for many addresses.
func BehindProxy(vars map[string]string) map[string]string {
	vars["WR_TRUSTED_PROXIES"] = "127.0.0.1"
	return vars
}
