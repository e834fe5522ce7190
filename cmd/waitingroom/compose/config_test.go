package compose

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"waitingroom/server/queuestatus"
)

// testSecret is a JWT secret long enough for LoadConfig.
const testSecret = "test-secret-test-secret-test-secret-0123"

// envOf is a getenv reading m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server
	if s.HTTPAddr != ":8080" || s.AdminAddr != "127.0.0.1:8081" || c.Admission.Defaults.Target != 20 || c.Admission.Interval != 100*time.Millisecond ||
		c.Admission.Defaults.EntryTTL != 120*time.Second || c.Login.BcryptCost != 10 || c.DBPool != 40 || len(c.Admission.Rooms) != 1 || c.Admission.Rooms[0] != "default" {
		t.Fatalf("defaults = %+v", c)
	}
	if r := c.Adaptive.Rule; r.Min != 2 || r.Max != 200 || c.Adaptive.Window != 10*time.Second || r.Ceiling != 2*time.Second ||
		r.MinSamples != 20 || c.FaultInjection {
		t.Fatalf("adaptive defaults = %+v", c.Adaptive)
	}
	if m := c.Metrics; m.QuietAfter != 10*time.Minute || m.MaxRooms != 1000 {
		t.Fatalf("metrics defaults = %+v", m)
	}
	if got := s.PollBands.PollAfter(57); got != time.Second {
		t.Fatalf("poll after at 57 = %v", got)
	}
}

func TestLoadConfigNamesTheBadVariable(t *testing.T) {
	cases := []struct{ name, key, value string }{
		{"secret missing", "WR_JWT_SECRET", ""},
		{"secret short", "WR_JWT_SECRET", "short"},
		{"target negative", "WR_TARGET_ACTIVE", "-1"},
		{"target not a number", "WR_TARGET_ACTIVE", "twenty"},
		{"interval unparsable", "WR_ADMIT_INTERVAL", "fast"},
		{"interval too small", "WR_ADMIT_INTERVAL", "1ms"},
		{"entry ttl zero", "WR_ENTRY_TTL", "0s"},
		{"bcrypt cost", "WR_BCRYPT_COST", "40"},
		{"bcrypt slots", "WR_BCRYPT_CONCURRENCY", "-1"},
		{"pool", "WR_DB_POOL", "0"},
		{"bands", "WR_POLL_BANDS", "100:1s,50:2s,*:5s"},
		{"rooms", "WR_ROOMS", "default,{bad}"},
		{"dev flag", "WR_DEV", "maybe"},
		{"adaptive max below min", "WR_ADAPTIVE_MAX", "1"},
		{"adaptive min zero", "WR_ADAPTIVE_MIN", "0"},
		{"adaptive window too short", "WR_ADAPTIVE_WINDOW", "10ms"},
		{"adaptive ceiling", "WR_ADAPTIVE_P90_CEILING", "slow"},
		{"fault injection", "WR_FAULT_INJECTION", "maybe"},
		{"admin token short", "WR_ADMIN_TOKEN", "dev-admin-token"}, // 15 bytes
		{"metrics quiet too short", "WR_METRICS_ROOM_QUIET", "10s"},
		{"metrics rooms zero", "WR_METRICS_MAX_ROOMS", "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"WR_JWT_SECRET": testSecret}
			env[tc.key] = tc.value
			_, err := LoadConfig(envOf(env))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.key {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.key)
			}
		})
	}
}

// TestAdminTokenLength: WR_ADMIN_TOKEN needs 16 bytes, make run's demo
// token is refused outside WR_DEV, and the refusal does not show the
// token.
func TestAdminTokenLength(t *testing.T) {
	for token, ok := range map[string]bool{"dev-admin-token": false, "0123456789abcde": false, "0123456789abcdef": true, DemoAdminToken: false, "": true} {
		c, err := LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret, "WR_ADMIN_TOKEN": token}))
		if ok {
			if err != nil || c.Server.AdminToken != token {
				t.Errorf("token %q: %v", token, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != "WR_ADMIN_TOKEN" || strings.Contains(err.Error(), token) {
			t.Errorf("token %q: err = %v, want a ConfigError naming WR_ADMIN_TOKEN without its value", token, err)
		}
	}
}

// TestDemoAdminTokenInDevMode: make run's token works in WR_DEV.
func TestDemoAdminTokenInDevMode(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"WR_DEV": "1", "WR_ADMIN_TOKEN": DemoAdminToken}))
	if err != nil || c.Server.AdminToken != DemoAdminToken {
		t.Fatalf("WR_DEV=1 with the demo token: %v", err)
	}
}

func TestDevModeGeneratesSecrets(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"WR_DEV": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tokens.Secret) < 32 || c.Server.AdminToken == "" {
		t.Fatalf("dev config = secret %d bytes, admin token %q", len(c.Tokens.Secret), c.Server.AdminToken)
	}
}

func TestParseBands(t *testing.T) {
	good := []struct {
		in   string
		pos  int64
		want time.Duration
	}{
		{queuestatus.DefaultBands, 1, time.Second},
		{queuestatus.DefaultBands, 100, time.Second},
		{queuestatus.DefaultBands, 101, 3 * time.Second},
		{queuestatus.DefaultBands, 1000, 3 * time.Second},
		{queuestatus.DefaultBands, 1001, 5 * time.Second},
		{"*:2s", 1_000_000, 2 * time.Second},
		{" 10:500ms , *:1s ", 10, 500 * time.Millisecond},
	}
	for _, tc := range good {
		b, err := queuestatus.ParseBands(tc.in)
		if err != nil {
			t.Fatalf("ParseBands(%q): %v", tc.in, err)
		}
		if got := b.PollAfter(tc.pos); got != tc.want {
			t.Errorf("ParseBands(%q).PollAfter(%d) = %v, want %v", tc.in, tc.pos, got, tc.want)
		}
	}
	for _, in := range []string{"", "100:1s", "*:1s,100:2s", "100:1s,100:2s,*:3s", "0:1s,*:1s", "x:1s,*:1s", "100:1,*:1s", "100:10ms,*:1s", "*:2h", "100-1s,*:1s"} {
		if _, err := queuestatus.ParseBands(in); err == nil {
			t.Errorf("ParseBands(%q) accepted", in)
		}
	}
}

func TestRedisTopologyConfig(t *testing.T) {
	bad := []struct {
		name string
		env  map[string]string
		want string // the variable named
	}{
		{"both", map[string]string{"WR_REDIS_CLUSTER": "a:1", "WR_REDIS_SENTINELS": "b:2", "WR_REDIS_MASTER": "m"}, "WR_REDIS_CLUSTER"},
		{"sentinels without master", map[string]string{"WR_REDIS_SENTINELS": "b:2"}, "WR_REDIS_MASTER"},
		{"master without sentinels", map[string]string{"WR_REDIS_MASTER": "m"}, "WR_REDIS_SENTINELS"},
		{"seed without port", map[string]string{"WR_REDIS_CLUSTER": "a:1,b"}, "WR_REDIS_CLUSTER"},
		{"cluster with a database", map[string]string{"WR_REDIS_CLUSTER": "a:1", "REDIS_URL": "redis://x:1/3"}, "REDIS_URL"},
		{"bad url", map[string]string{"REDIS_URL": "http://x"}, "REDIS_URL"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["WR_JWT_SECRET"] = testSecret
			_, err := LoadConfig(envOf(tc.env))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.want {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.want)
			}
		})
	}
	for env, kind := range map[string]string{"": "single", "WR_REDIS_CLUSTER": "cluster", "WR_REDIS_SENTINELS": "sentinel"} {
		m := map[string]string{"WR_JWT_SECRET": testSecret}
		if env != "" {
			m[env] = " 10.0.0.1:6379, 10.0.0.2:6379 "
			m["WR_REDIS_MASTER"] = "wr"
			if env == "WR_REDIS_CLUSTER" {
				delete(m, "WR_REDIS_MASTER")
			}
		}
		c, err := LoadConfig(envOf(m))
		if err != nil || c.Redis.Kind() != kind {
			t.Fatalf("%s: kind %q, %v; want %s", env, c.Redis.Kind(), err, kind)
		}
		if kind != "single" && (len(c.Redis.Cluster)+len(c.Redis.Sentinels) != 2 || slices.Contains(append(c.Redis.Cluster, c.Redis.Sentinels...), " 10.0.0.1:6379")) {
			t.Fatalf("%s: addresses %v %v", env, c.Redis.Cluster, c.Redis.Sentinels)
		}
	}
}

func TestHoardingConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string {
			if k == "WR_DEV" {
				return "1"
			}
			return vars[k]
		}
	}
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server
	if s.Listener.PerAddr != 0 || s.Listener.FirstRequest != 5*time.Second || c.Streams.MaxPerUser != 3 {
		t.Fatalf("defaults: per IP %d (0: derived), first request %v, streams per user %d; want 0, 5s, 3",
			s.Listener.PerAddr, s.Listener.FirstRequest, c.Streams.MaxPerUser)
	}
	for name, bad := range map[string]string{"WR_MAX_CONNS_PER_IP": "-1", "WR_FIRST_REQUEST_TIMEOUT": "10ms", "WR_MAX_STREAMS_PER_USER": "many"} {
		_, err := LoadConfig(env(map[string]string{name: bad}))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != name {
			t.Errorf("%s=%s: %v, want a ConfigError naming it", name, bad, err)
		}
	}
}

// TestSeedConfigNeedsNoSecret: seeding reads the database and the BCrypt
// cost only — no JWT secret, no development mode — and names a bad cost.
func TestSeedConfigNeedsNoSecret(t *testing.T) {
	c, err := LoadSeedConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x@y/z"}))
	if err != nil || c.DatabaseURL != "postgres://x@y/z" || c.BcryptCost != 10 {
		t.Fatalf("seed config = %+v, %v", c, err)
	}
	_, err = LoadSeedConfig(envOf(map[string]string{"WR_BCRYPT_COST": "3"}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Var != "WR_BCRYPT_COST" {
		t.Fatalf("WR_BCRYPT_COST=3: %v, want a ConfigError naming it", err)
	}
}

// TestProtectConfig: WR_PROTECT is read with WR_UPSTREAM, names rooms that
// WR_ROOMS creates, and a bad entry is named.
func TestProtectConfig(t *testing.T) {
	base := map[string]string{"WR_JWT_SECRET": testSecret, "WR_DEV": "1", "WR_UPSTREAM": "http://127.0.0.1:9", "WR_ROOMS": "default,sale"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for kk, vv := range base {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	c, err := LoadConfig(envOf(with("WR_PROTECT", "POST /api/orders=sale, GET /checkout/*=sale")))
	if err != nil || len(c.Gateway.Protect) != 2 || c.Gateway.Passes.Key == nil {
		t.Fatalf("valid gateway config: %+v, %v", c.Gateway, err)
	}
	for _, bad := range []map[string]string{
		with("WR_PROTECT", "GET /checkout/*=vip"),                     // vip is not created
		with("WR_PROTECT", "GET checkout=sale"),                       // not a path
		with("WR_UPSTREAM", "ftp://x"),                                // not http(s)
		{"WR_JWT_SECRET": testSecret, "WR_PROTECT": "GET /a=default"}, // no upstream
	} {
		_, err := LoadConfig(envOf(bad))
		var ce *ConfigError
		if !errors.As(err, &ce) || (ce.Var != "WR_PROTECT" && ce.Var != "WR_UPSTREAM") {
			t.Errorf("%v: %v, want a ConfigError naming WR_PROTECT or WR_UPSTREAM", bad, err)
		}
	}
	if _, err := LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret, "WR_UPSTREAM": "http://127.0.0.1:9"})); err == nil {
		t.Error("gateway mode without WR_PASS_KEY (and not WR_DEV) was accepted")
	}
}

// TestDatabaseURLInGatewayMode: DATABASE_URL unset means the local demo
// database outside gateway mode (as it always did) and no Postgres at all
// in gateway mode; set, it is used in both.
func TestDatabaseURLInGatewayMode(t *testing.T) {
	gw := map[string]string{"WR_JWT_SECRET": testSecret, "WR_DEV": "1", "WR_UPSTREAM": "http://127.0.0.1:9", "WR_ROOMS": "sale",
		"WR_PROTECT": "GET /checkout/*=sale"}
	const url = "postgres://x@y/z"
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		want    string
		postgre bool
	}{
		{"classic, unset", map[string]string{"WR_JWT_SECRET": testSecret}, defaultDatabaseURL, true},
		{"classic, set", map[string]string{"WR_JWT_SECRET": testSecret, "DATABASE_URL": url}, url, true},
		{"gateway, unset", gw, "", false},
		{"gateway, blank", merged(gw, "DATABASE_URL", "  "), "", false},
		{"gateway, set", merged(gw, "DATABASE_URL", url), url, true},
	} {
		c, err := LoadConfig(envOf(tc.vars))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.DatabaseURL; got != tc.want || c.UsesPostgres() != tc.postgre {
			t.Errorf("%s: DatabaseURL %q, UsesPostgres %v; want %q, %v", tc.name, got, c.UsesPostgres(), tc.want, tc.postgre)
		}
	}
}

// merged is m with k set to v (m itself unchanged).
func merged(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}
