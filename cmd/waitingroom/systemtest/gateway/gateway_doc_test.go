package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/admin"
)

// gatewayExample is docs/gateway.md's first example: the variables it
// exports, in order, and the command it ends with.
func gatewayExample(t *testing.T) (vars [][2]string, command string) {
	t.Helper()
	doc, err := os.ReadFile("../../../../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/gateway.md has no ```sh example")
	}
	export := regexp.MustCompile(`^export ([A-Z_]+)=("[^"]*"|\$\([^)]*\)|\S+)$`)
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		code, _, _ := strings.Cut(line, "  #") // the comment
		code = strings.TrimSpace(code)
		if m := export.FindStringSubmatch(code); m != nil {
			vars = append(vars, [2]string{m[1], strings.Trim(m[2], `"`)})
			continue
		}
		if command != "" {
			t.Fatalf("docs/gateway.md's example goes on after its command %q: %q", command, line)
		}
		command = code
	}
	return vars, command
}

// openssl is the value of the example's $(openssl rand -base64 N) or
// $(openssl rand -hex N), made here (the test needs no openssl); any other
// value is returned as it is.
func openssl(t *testing.T, v string) string {
	t.Helper()
	m := regexp.MustCompile(`^\$\(openssl rand -(base64|hex) ([0-9]+)\)$`).FindStringSubmatch(v)
	if m == nil {
		return v
	}
	n, _ := strconv.Atoi(m[2])
	b := make([]byte, n)
	_, _ = rand.Read(b)
	if m[1] == "hex" {
		return hex.EncodeToString(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestGatewayDocExampleRuns: the first example of docs/gateway.md, run as
// written with this test's origin and Redis in place of the ones it names
// (and nothing else: no database, none of the harness's own secrets),
// serves: the shop through the gateway, its checkout queued in the room,
// readiness without Postgres, the admin API with the example's token. The
// example starts the server with the serve command of this package.
func TestGatewayDocExampleRuns(t *testing.T) {
	vars, command := gatewayExample(t)
	if command != "go run ./cmd/waitingroom serve" {
		t.Fatalf("the example's command is %q, want go run ./cmd/waitingroom serve", command)
	}
	o := systemtest.StartOrigin(t)
	e := systemtest.NewRedisOnlyEnv(t)
	env := map[string]string{
		// The harness's own database and secrets are blanked, so only the
		// example's count; its Redis is the harness's client (REDIS_URL is
		// not read), and admission ticks every 20 ms, not once a minute.
		"DATABASE_URL": "", "WR_JWT_SECRET": "", "WR_ADMIN_TOKEN": "", "WR_ADMIT_INTERVAL": "20ms",
	}
	seen := map[string]bool{}
	for _, kv := range vars {
		k, v := kv[0], openssl(t, kv[1])
		seen[k] = true
		if k == "WR_UPSTREAM" {
			v = o.Server.URL
		}
		env[k] = v
	}
	for _, k := range []string{"WR_UPSTREAM", "WR_ROOMS", "WR_PROTECT", "WR_PASS_KEY", "WR_JWT_SECRET"} {
		if !seen[k] {
			t.Errorf("the example does not set %s", k)
		}
	}
	if seen["DATABASE_URL"] || seen["WR_DEV"] {
		t.Error("the example sets DATABASE_URL or WR_DEV: a gateway needs neither")
	}
	in := e.Start(env)
	if in.Main.Store() != nil {
		t.Fatal("the example's server opened Postgres")
	}
	c := systemtest.Visitor(t)
	if code, h, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", "", "Accept", "text/html"); code != 303 ||
		!strings.HasPrefix(h.Get("Location"), "/_wr/rooms/sale?return=") {
		t.Fatalf("the protected checkout without a pass: %d %v, want 303 to the waiting page", code, h)
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/", ""); code != 200 || m["uri"] != "/" {
		t.Fatalf("the shop's front page through the gateway: %d %v", code, m)
	}
	admitted(t, in, c, "sale")
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 200 || m["uri"] != "/checkout/cart" {
		t.Fatalf("the checkout once admitted: %d %v", code, m)
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz: %d %s", r.Status, r.Raw)
	}
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", env["WR_ADMIN_TOKEN"], map[string]any{"paused": false})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get(admin.HeaderDefinition), "not-recorded") {
		t.Fatalf("PUT /admin/rooms/sale with the example's token: %d %v %s", r.Status, r.Header, r.Raw)
	}
}
