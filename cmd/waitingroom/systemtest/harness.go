package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/queue/queuetest"
	"waitingroom/server"
	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

const (
	TestSecret     = "test-secret-test-secret-test-secret-0123"
	TestAdminToken = "admin-test-token"
	TestPassword   = "pw"
	TestUsers      = 60
)

// Env is a test's shared backing services: one fresh database, seeded, and
// one Redis key prefix. Several server instances may share one env.
type Env struct {
	T      testing.TB
	DBURL  string
	Redis  redis.UniversalClient
	Prefix string
	// RedisEnv describes rdb's topology to child processes (REDIS_URL, or
	// WR_REDIS_CLUSTER / WR_REDIS_SENTINELS + WR_REDIS_MASTER); empty:
	// derived from rdb, a single-node client.
	RedisEnv []string
}

// redisVars are the environment variables that connect a child process to
// e's Redis.
func (e *Env) redisVars() []string {
	if e.RedisEnv != nil {
		return e.RedisEnv
	}
	o := e.Redis.(*redis.Client).Options()
	return []string{"REDIS_URL=redis://" + o.Addr + "/" + strconv.Itoa(o.DB)}
}

func NewEnv(t testing.TB) *Env {
	t.Helper()
	return newEnvAt(t, pgtest.URL(t))
}

// NewEnvOwnDatabase is NewEnv on a database of its own, for a test that
// acts on the whole database (refuses its connections): a schema of its
// own, which NewEnv gives, would take every other test down with it.
func NewEnvOwnDatabase(t testing.TB) *Env {
	t.Helper()
	return newEnvAt(t, pgtest.DatabaseURL(t))
}

// NewRedisOnlyEnv is an env without a database: Redis alone, for an
// instance that opens no Postgres (gateway mode without DATABASE_URL).
func NewRedisOnlyEnv(t testing.TB) *Env {
	t.Helper()
	QuickBeside(t)
	rdb, prefix := queuetest.Redis(t)
	return &Env{T: t, Redis: rdb, Prefix: prefix}
}

func newEnvAt(t testing.TB, dbURL string) *Env {
	t.Helper()
	QuickBeside(t)
	rdb, prefix := queuetest.Redis(t)
	// Every connection to the database counts against PostgresConns.
	e := &Env{T: t, DBURL: budgetURL(t, dbURL), Redis: rdb, Prefix: prefix}
	SeedDB(t, e.DBURL)
	return e
}

// SeedDB migrates and seeds the database at url: TestUsers users (ids
// 1…TestUsers, password TestPassword) and 3 products with stock 1000.
func SeedDB(t testing.TB, url string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := pgstore.Open(context.Background(), url, pgstore.Options{PoolSize: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hash, _ := bcrypt.GenerateFromPassword([]byte(TestPassword), bcrypt.MinCost)
	if _, err := store.Seed(context.Background(), pgstore.SeedOptions{Users: TestUsers, PasswordHash: hash, Products: 3, Stock: 1000}); err != nil {
		t.Fatal(err)
	}
}

// Exec runs SQL on the env's database (test set-up only).
func (e *Env) Exec(sql string, args ...any) {
	e.T.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.DBURL)
	if err != nil {
		e.T.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		e.T.Fatal(err)
	}
}

// Instance is one running server on loopback ports.
type Instance struct {
	t      testing.TB
	Env    *Env
	Main   *compose.Main  // the instance as the command composes it
	Server *server.Server // main's server
	Parts  *compose.Parts // main's components
	Base   string         // public, e.g. http://127.0.0.1:39211
	Admin  string         // management
	Logs   *queuetest.SyncBuffer
	Stop   func()       // stops the server (once) and fails the test if Serve failed
	Kill   func()       // child processes only: SIGKILL
	Term   func() error // child processes only: SIGTERM, then the exit status
}

// logTail is how many lines of an instance's log a failed test prints.
const logTail = 40

// tail is the last n lines written to s.
func tail(s *queuetest.SyncBuffer, n int) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d lines before)\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}

// Start runs a server instance on e with extra environment variables
// (rate limits are off unless WR_RATE_LIMITS is passed).
// By default the admission loop ticks once a minute, so tests drive
// admission themselves with admit(); pass WR_ADMIT_INTERVAL to run it.
func (e *Env) Start(vars map[string]string) *Instance {
	t := e.T
	t.Helper()
	getenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return map[string]string{
			"WR_JWT_SECRET":       TestSecret,
			"WR_ADMIN_TOKEN":      TestAdminToken,
			"WR_BCRYPT_COST":      "4",
			"WR_ADMIT_INTERVAL":   "1m",
			"WR_TARGET_ACTIVE":    "5",
			"WR_SHUTDOWN_TIMEOUT": "5s",
			// Layer 1 is tested on its own (hostile/ratelimits_test.go); elsewhere the
			// tests drive the API far faster than any person would.
			"WR_RATE_LIMITS": "off",
			// Likewise the proof of work of gateway mode's anonymous enters
			// (its tests turn it on).
			"WR_GATEWAY_CHALLENGE": "off",
			// At cost 4 BCrypt takes a millisecond: one slot per core
			// would only make tests that log in concurrently wait on each
			// other on a loaded machine. The slots have their own test.
			"WR_BCRYPT_CONCURRENCY": "64",
			// Everything, so that tests of what is logged see every line.
			"WR_LOG_LEVEL": "debug",
		}[k]
	}
	cfg, err := compose.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if e.DBURL != "" { // else: the configuration's (none in gateway mode)
		cfg.DatabaseURL = e.DBURL
	}
	logs := &queuetest.SyncBuffer{}
	log := compose.NewLogger(logs, cfg.Log, true) // text unless WR_LOG_FORMAT=json
	// The instance as the command composes it (Main), on e's Redis client
	// and key prefix and on loopback ports.
	m := &compose.Main{Config: cfg, Log: log, Redis: e.Redis, KeyPrefix: e.Prefix}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(errors.Join(err, m.Close()))
	}
	if err := EnsureRooms(context.Background(), m); err != nil {
		t.Fatal(errors.Join(err, m.Close()))
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	// On a failure, the instance's own log tail, after its shutdown (this
	// cleanup is registered before stop's, so it runs after it).
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log of the instance at %s, its last %d lines:\n%s", pub.Addr(), logTail, tail(logs, logTail))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, pub, adm) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Cleanup(stop)
	return &Instance{t: t, Env: e, Main: m, Server: m.Server(), Parts: m.Parts(), Base: "http://" + pub.Addr().String(), Admin: "http://" + adm.Addr().String(), Logs: logs, Stop: stop}
}

// EnsureRooms creates m's configured rooms (WR_ROOMS) unless they exist,
// as the admission loop's first run would (it ticks once a minute here).
func EnsureRooms(ctx context.Context, m *compose.Main) error {
	for _, room := range m.Config.Admission.Rooms {
		if err := m.Parts().Queue.EnsureRoom(ctx, room, m.Config.Admission.Defaults); err != nil {
			return err
		}
	}
	return nil
}

// Response is a decoded HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r Response) Str(k string) string {
	s, _ := r.Body[k].(string)
	return s
}

func (r Response) Num(k string) int64 {
	f, _ := r.Body[k].(float64)
	return int64(f)
}

var Client = &http.Client{Timeout: 30 * time.Second, Transport: askingTransport(&net.Dialer{})}

// askingTransport is an HTTP transport whose connections, dialed by d,
// hand the bytes a server sends before any request on them to the
// transport only once a request has been written (askingConn). A server
// at its connection cap answers a connection 503 at accept, before any
// request (server/listener); net/http reads a new connection as soon as
// it is dialed, so when those bytes arrive before the request is written,
// or on a connection dialed for a request that another one then served
// (it waits in the idle pool), the transport drops them and prints
// "Unsolicited response received on idle HTTP channel" to the process's
// log. Handed over after the request, the 503 is that request's answer,
// as the tests that count refusals expect.
func askingTransport(d *net.Dialer) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &askingConn{Conn: c, asked: make(chan struct{})}, nil
	}
	return tr
}

// askingConn is a connection whose first bytes read wait for its first
// write (or its close). A close or an error before any request is told at
// once, so that the transport drops a connection the server closed while
// it was idle, as it would without the wrapper.
type askingConn struct {
	net.Conn
	once  sync.Once
	asked chan struct{}
}

func (c *askingConn) ask() { c.once.Do(func() { close(c.asked) }) }

func (c *askingConn) Read(p []byte) (int, error) {
	select {
	case <-c.asked:
		return c.Conn.Read(p)
	default:
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		<-c.asked // the server spoke first: its answer is the request's
	}
	return n, err
}

func (c *askingConn) Write(p []byte) (int, error) {
	c.ask()
	return c.Conn.Write(p)
}

func (c *askingConn) Close() error {
	c.ask()
	return c.Conn.Close()
}

// newRequest builds a request; body may be nil, a string (sent as is) or
// a value (JSON); headers are name, value pairs.
func newRequest(t testing.TB, method, url, bearer string, body any, headers ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// Do sends a request; body may be a string (sent as is) or a value (JSON).
func Do(t testing.TB, method, url, bearer string, body any, headers ...string) Response {
	t.Helper()
	req := newRequest(t, method, url, bearer, body, headers...)
	res, err := Client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return Response{}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

func (in *Instance) Login(user string) string {
	in.t.Helper()
	r := Do(in.t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": user, "password": TestPassword})
	if r.Status != 200 {
		in.t.Fatalf("login %s: %d %s", user, r.Status, r.Raw)
	}
	return r.Str("accessToken")
}

// Enter logs user in and enters room; it returns the enter response.
func (in *Instance) Enter(user, room string) Response {
	in.t.Helper()
	r := Do(in.t, "POST", in.Base+"/api/v1/rooms/"+room+"/enter", in.Login(user), nil)
	if r.Status != 200 {
		in.t.Fatalf("enter %s: %d %s", user, r.Status, r.Raw)
	}
	return r
}

func (in *Instance) Position(room, queueToken string) Response {
	in.t.Helper()
	return Do(in.t, "GET", in.Base+"/api/v1/rooms/"+room+"/position", queueToken, nil)
}

func (in *Instance) Order(queueToken, entryToken string, product, qty int) Response {
	in.t.Helper()
	return Do(in.t, "POST", in.Base+"/api/v1/orders", queueToken,
		map[string]int{"productId": product, "quantity": qty}, "X-Entry-Token", entryToken)
}

// Admit runs one admission step for room, as the loop would.
func (in *Instance) Admit(room string) int {
	in.t.Helper()
	res, err := in.Parts.Queue.Admit(context.Background(), room, 64)
	if err != nil {
		in.t.Fatal(err)
	}
	return len(res.Admitted)
}

func (in *Instance) AdminRoom(room string) Response {
	in.t.Helper()
	return Do(in.t, "GET", in.Admin+"/admin/rooms/"+room, TestAdminToken, nil)
}

// Metric returns the sum of a counter or the count of a histogram across
// all label values, read from /metrics.
func (in *Instance) Metric(name string) float64 {
	in.t.Helper()
	return in.MetricWhere(name)
}

// MetricWhere returns the sum of the series of name whose labels include
// every "label=value" given.
func (in *Instance) MetricWhere(name string, labels ...string) float64 {
	in.t.Helper()
	mfs, err := in.Parts.Metrics.Registry.Gather()
	if err != nil {
		in.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for _, kv := range labels {
				k, v, _ := strings.Cut(kv, "=")
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

// WaitFor polls cond until it holds or 10 s pass (the shared helper).
var WaitFor = queuetest.WaitFor

// WaitWithin polls cond until it holds or d passes.
func WaitWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func User(i int) string { return fmt.Sprintf("user%d", i) }

// LongScenario marks a scenario that takes seconds of timers and waits by
// design (idle timeouts, admission windows, adaptive steps): -short (make
// test-short) skips it, and make test runs it in parallel with the other
// long ones, since it mostly waits. Each owns its Redis prefix, its database
// and its servers (NewEnv), so they share nothing but the CPU; one that must
// not run beside others (process-wide state: t.Setenv, signals, limits)
// does not call this.
func LongScenario(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a scenario of several seconds")
	}
	Parallel(t)
}

// QuickBeside runs a quick test that builds an env beside the other quick
// ones under -short (the developer's loop, make test-short): each owns
// its Redis prefix, its schema and its servers, and most of a quick test's
// time is round trips, so side by side the package takes half as long.
// Only top-level tests: a subtest made parallel would let its parent go on
// before it ran. make test keeps the quick tests one after another, ahead
// of the long scenarios, so that their margins are those of a lone test
// under -race.
func QuickBeside(tb testing.TB) {
	t, ok := tb.(*testing.T)
	if !ok || !testing.Short() || strings.Contains(t.Name(), "/") {
		return
	}
	Parallel(t)
}

// Parallel is t.Parallel, once: a test that said so itself (or built a
// second env) is not told again, which would panic.
func Parallel(t *testing.T) {
	if parallels.First(t) {
		t.Parallel()
	}
}

var parallels TestSet

// TestSet is a set of running tests, each kept until it ends.
type TestSet struct {
	mu sync.Mutex
	m  map[*testing.T]bool
}

// First adds t and reports whether it was not in the set yet.
func (s *TestSet) First(t *testing.T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[t] {
		return false
	}
	if s.m == nil {
		s.m = map[*testing.T]bool{}
	}
	s.m[t] = true
	t.Cleanup(func() {
		s.mu.Lock()
		delete(s.m, t)
		s.mu.Unlock()
	})
	return true
}

// BusyScenario is a long scenario that keeps the CPU busy by design (BCrypt
// at a high cost): -short skips it, and it runs alone, not beside the
// parallel ones, so that what it measures is its own load.
func BusyScenario(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a scenario of several seconds")
	}
}

// EnvOf is a getenv reading m, for LoadConfig.
func EnvOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}
