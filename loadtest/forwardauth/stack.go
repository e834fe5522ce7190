package forwardauth

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/freeport"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/proc"
)

var (
	//go:embed origin.conf
	originConf string
)

// pageBytes is the size of the origin's page.
const pageBytes = 1024

// startDeadline bounds the wait for each process to be ready.
const startDeadline = 60 * time.Second

// stopGrace bounds the wait for a process to exit after SIGTERM; then it
// is killed.
const stopGrace = 10 * time.Second

// stack is what the scenario runs against: the waiting room in forward
// auth, the origin, the proxy and the waiting room in gateway mode, each a
// process of its own, over a run directory that is removed at the end.
type stack struct {
	dir            string
	server, origin *proc.Proc
	direct, prx    *proc.Proc // the template with auth_request off, and as shipped
	gateway        *proc.Proc // the waiting room in gateway mode, in front of the origin
	proxyWorkers   int
	dbs            []*redis.Client // the servers' databases, emptied at the end
	redisURL       string          // the forward-auth server's database
	gatewayRedis   string          // the gateway's
	nginxVersion   string
	template       string // the proxy's configuration

	wrAddr, adminAddr string // the waiting room: public (/_wr/auth) and management
	originAddr        string
	directAddr        string // direct: straight to the origin
	authAddr          string // prx: asking /_wr/auth first
	gwAddr, gwAdmin   string // the gateway: public (the origin's paths) and management
}

// startStack checks the server's Redis database, then starts the waiting
// room, the origin and the proxy; on error what was started is stopped
// again.
func startStack(ctx context.Context, c faConfig, room string) (s *stack, err error) {
	s = &stack{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.close())
			s = nil
		}
	}()
	if s.dir, err = os.MkdirTemp("", "wr-forward-auth-"); err != nil {
		return s, err
	}
	// nginx's workers run as nobody when nginx starts as root: the page
	// and the run directory must be readable by anyone.
	if err = os.Chmod(s.dir, 0o755); err != nil {
		return s, err
	}
	nginx, version, err := findNginx(c.nginxBin)
	if err != nil {
		return s, err
	}
	if s.template, err = findTemplate(c.template); err != nil {
		return s, err
	}
	s.nginxVersion = version
	// The two waiting rooms are two fleets: a database each.
	if s.redisURL, err = s.openRedis(ctx, c.redisURL, c.redisDB); err != nil {
		return s, err
	}
	if s.gatewayRedis, err = s.openRedis(ctx, c.redisURL, c.redisDB+1); err != nil {
		return s, err
	}
	bin := c.serverBin
	if bin == "" {
		fmt.Fprintln(os.Stderr, "forward-auth: building waitingroom/cmd/waitingroom")
		if bin, err = buildServer(s.dir); err != nil {
			return s, err
		}
	}
	for _, a := range []*string{&s.wrAddr, &s.adminAddr, &s.originAddr, &s.directAddr, &s.authAddr, &s.gwAddr, &s.gwAdmin} {
		if *a, err = freeport.BelowEphemeral(); err != nil {
			return s, err
		}
	}
	if err = s.startServer(ctx, bin, room); err != nil {
		return s, err
	}
	if err = s.startNginx(nginx, s.template); err != nil {
		return s, err
	}
	if err = s.startGateway(ctx, bin, room); err != nil {
		return s, err
	}
	return s, nil
}

// findNginx is the nginx binary (flag, else nginx on PATH, else
// /usr/sbin/nginx) and its version line.
func findNginx(flagged string) (string, string, error) {
	bin := flagged
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nginx"); err != nil {
			bin = "/usr/sbin/nginx"
		}
	}
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("nginx (%s) does not run: %v%s; install it (apt-get install nginx; `make test` installs it) or name it with --nginx", bin, err, strings.TrimRight(" "+string(out), " \n"))
	}
	v := strings.TrimSpace(string(out))
	v = strings.TrimPrefix(v, "nginx version: ")
	return bin, v, nil
}

// openRedis connects to the database db of the Redis at url, which must
// hold no key (the run empties it at the end), and returns its URL.
func (s *stack) openRedis(ctx context.Context, raw string, db int) (string, error) {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return "", fmt.Errorf("--redis: %w", err)
	}
	opt.DB = db
	rdb := redis.NewClient(opt)
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		rdb.Close()
		return "", fmt.Errorf("redis %s: %w", opt.Addr, err)
	}
	if n != 0 {
		rdb.Close()
		return "", fmt.Errorf("redis %s database %d holds %d keys: the run needs empty ones of its own (--redis-db and the next), which it empties at the end", opt.Addr, db, n)
	}
	s.dbs = append(s.dbs, rdb)
	u, _ := url.Parse(raw) // redis.ParseURL has parsed it
	u.Path = "/" + strconv.Itoa(db)
	return u.String(), nil
}

// buildServer builds waitingroom/cmd/waitingroom into dir.
func buildServer(dir string) (string, error) {
	path, err := proc.GoBuild(dir, "waitingroom", "waitingroom/cmd/waitingroom")
	if err != nil {
		return "", fmt.Errorf("%w\n(or name a binary with --server-bin)", err)
	}
	return path, nil
}

// baseEnv is this process's environment without any server
// configuration.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "WR_") && k != "REDIS_URL" && k != "DATABASE_URL" {
			env = append(env, kv)
		}
	}
	return env
}

// serverEnv is the forward-auth server's environment: forward auth for
// room behind 127.0.0.1, on Redis alone.
func (s *stack) serverEnv(room string) []string {
	return append(baseEnv(),
		"WR_FORWARD_AUTH=on", "WR_TRUSTED_PROXIES=127.0.0.1",
		"WR_PROTECT=GET /checkout/*="+room, "WR_ROOMS="+room,
		"WR_DEV=1", "WR_GATEWAY_CHALLENGE=off", "WR_RATE_LIMITS=off", "WR_LOG_LEVEL=warn",
		"WR_HTTP_ADDR="+s.wrAddr, "WR_ADMIN_ADDR="+s.adminAddr, "REDIS_URL="+s.redisURL,
		"WR_ADMIN_TOKEN="+adminToken)
}

// gatewayEnv is the gateway's: the same room and route, in front of the
// origin, on Redis alone. Its visitors are the load tool's connections,
// not a proxy's: no trusted proxy.
func (s *stack) gatewayEnv(room string) []string {
	return append(baseEnv(),
		"WR_UPSTREAM=http://"+s.originAddr,
		"WR_PROTECT=GET /checkout/*="+room, "WR_ROOMS="+room,
		"WR_DEV=1", "WR_GATEWAY_CHALLENGE=off", "WR_RATE_LIMITS=off", "WR_LOG_LEVEL=warn",
		"WR_HTTP_ADDR="+s.gwAddr, "WR_ADMIN_ADDR="+s.gwAdmin, "REDIS_URL="+s.gatewayRedis,
		"WR_ADMIN_TOKEN="+adminToken)
}

// adminToken is the scenario's waiting room's admin token; maxInFlight
// the most a room's sessionInFlight may be (the admin API refuses more).
const (
	adminToken  = "forward-auth-scenario"
	maxInFlight = 1000
)

// startServer starts the waiting room and waits until it is ready and
// answers a decision.
func (s *stack) startServer(ctx context.Context, bin, room string) error {
	var err error
	if s.server, err = proc.Start(s.dir, s.dir, "waitingroom", s.serverEnv(room), bin); err != nil {
		return err
	}
	if err := client.AwaitReady(ctx, "http://"+s.adminAddr, startDeadline); err != nil {
		return errors.Join(err, s.server.Running())
	}
	// Each connection asks in a closed loop with one visit's cookie,
	// thousands of decisions a second: the most a visit may have in
	// forward auth (sessionInFlight per gateway.DecisionHold), so that
	// what is measured is a decision's cost, not the visit's bound.
	if err := raiseInFlight(ctx, s.adminAddr, room); err != nil {
		return fmt.Errorf("waitingroom: %w", err)
	}
	hc := client.NewFrom(proxyAddr, 1, 5*time.Second)
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.wrAddr+authPath, nil)
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("X-Original-URI", "/")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("waitingroom: a first decision: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("waitingroom: a first decision for GET /: %s, want 200 (is forward auth on?)", resp.Status)
	}
	return nil
}

// raiseInFlight sets room's sessionInFlight to its most on the server
// whose management address is admin.
func raiseInFlight(ctx context.Context, admin, room string) error {
	adm := &client.Admin{Base: "http://" + admin, Token: adminToken, Room: room, HTTP: client.NewFrom(proxyAddr, 1, 5*time.Second)}
	defer adm.HTTP.CloseIdleConnections()
	if err := adm.Do(ctx, http.MethodPut, map[string]any{"gateway": map[string]any{"sessionInFlight": maxInFlight}}, nil); err != nil {
		return fmt.Errorf("the room's sessionInFlight: %w", err)
	}
	return nil
}

// startGateway starts the waiting room in gateway mode, once the origin
// runs, and waits until it forwards an unprotected request.
func (s *stack) startGateway(ctx context.Context, bin, room string) error {
	var err error
	if s.gateway, err = proc.Start(s.dir, s.dir, "gateway", s.gatewayEnv(room), bin); err != nil {
		return err
	}
	if err := client.AwaitReady(ctx, "http://"+s.gwAdmin, startDeadline); err != nil {
		return errors.Join(err, s.gateway.Running())
	}
	// A visit's requests in flight at once are bounded by sessionInFlight;
	// one connection a visitor keeps one in flight, but a phase with fewer
	// visitors than connections shares them.
	if err := raiseInFlight(ctx, s.gwAdmin, room); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	hc := client.NewFrom(proxyAddr, 1, 5*time.Second)
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.gwAddr+openURI, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("gateway: a first forwarded request: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gateway: a first forwarded request, GET %s: %s, want the origin's 200", openURI, resp.Status)
	}
	return nil
}

// authLine is the template's auth_request line; direct is the template
// with it turned off.
const authLine = "auth_request /_wr/auth;"

// startNginx writes the page and the configurations and starts the
// origin and both proxies, each nginx in a prefix folder of its own.
func (s *stack) startNginx(bin, tmplPath string) error {
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		return fmt.Errorf("the proxy template: %w", err)
	}
	if n := strings.Count(string(tmpl), authLine); n != 1 {
		return fmt.Errorf("%s: %d lines %q, want one (nginx → origin is the template with it off)", tmplPath, n, authLine)
	}
	direct := strings.Replace(string(tmpl), authLine, "auth_request off;", 1)
	www := filepath.Join(s.dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return err
	}
	page := "<!doctype html><title>shop</title>" + strings.Repeat("x", pageBytes-len("<!doctype html><title>shop</title>")-1) + "\n"
	if err := os.WriteFile(filepath.Join(www, "page.html"), []byte(page), 0o644); err != nil {
		return err
	}
	start := func(name, conf string, vars map[string]string) (*proc.Proc, error) {
		prefix := filepath.Join(s.dir, name)
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(prefix, "nginx.conf"), []byte(render(conf, vars)), 0o644); err != nil {
			return nil, err
		}
		// As the template says to run it: -p DIR -c nginx.conf.
		p, err := proc.Start(s.dir, s.dir, name, nil, bin, "-p", prefix, "-c", "nginx.conf", "-g", "daemon off;")
		if err != nil {
			return nil, err
		}
		p.ErrorLog = filepath.Join(prefix, "error.log")
		if err := p.AwaitListening(vars["LISTEN_ADDR"], startDeadline); err != nil {
			return p, err
		}
		return p, nil
	}
	if s.origin, err = start("origin", originConf, map[string]string{"ORIGIN_ADDR": s.originAddr, "LISTEN_ADDR": s.originAddr, "WWW": www}); err != nil {
		return err
	}
	proxyVars := func(listen string) map[string]string {
		return map[string]string{"LISTEN_ADDR": listen, "WAITINGROOM_ADDR": s.wrAddr, "ORIGIN_ADDR": s.originAddr}
	}
	if s.direct, err = start("direct", direct, proxyVars(s.directAddr)); err != nil {
		return err
	}
	if s.prx, err = start("proxy", string(tmpl), proxyVars(s.authAddr)); err != nil {
		return err
	}
	s.proxyWorkers = len(childrenOf(s.prx.Pid()))
	return nil
}

// findTemplate is path, or when "" the shipped nginx template,
// deploy/forward-auth/nginx.conf.template, looked for from the working
// directory up.
func findTemplate(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, shippedTemplate)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found from the working directory up: run from within the repository, or name it with --nginx-template", shippedTemplate)
		}
		dir = parent
	}
}

// shippedTemplate is the nginx configuration shops copy.
const shippedTemplate = "deploy/forward-auth/nginx.conf.template"

// render replaces ${NAME} for each NAME of vars, and nothing else, as
// envsubst '${NAME} …' does: nginx's own $variables stay.
func render(conf string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "${"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(conf)
}

// close stops the gateway, the proxies, the origin and the waiting room,
// in that order, then empties the servers' databases and removes the run
// directory.
func (s *stack) close() error {
	var errs []error
	for _, p := range []*proc.Proc{s.gateway, s.prx, s.direct, s.origin, s.server} {
		if p != nil {
			errs = append(errs, p.Stop(stopGrace))
		}
	}
	for _, rdb := range s.dbs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, rdb.FlushDB(ctx).Err())
		cancel()
		errs = append(errs, rdb.Close())
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// alive is nil while every process runs, else names the first that
// exited (its output comes with close's error).
func (s *stack) alive() error {
	for _, p := range []*proc.Proc{s.server, s.origin, s.direct, s.prx, s.gateway} {
		if p.Running() != nil {
			return fmt.Errorf("%s exited during the run", p.Name)
		}
	}
	return nil
}

// cpuSources are the processes whose CPU time each phase reads: the
// waiting room, the proxies' (both, one idle in each phase) and the
// origin's nginx with their workers, the gateway, and the load tool
// itself.
func (s *stack) cpuSources() []cpuSource {
	return []cpuSource{{procServer, s.server.Pid(), false}, {procProxy, s.prx.Pid(), true}, {procProxy, s.direct.Pid(), true},
		{procOrigin, s.origin.Pid(), true}, {procGateway, s.gateway.Pid(), false}, {procTool, os.Getpid(), false}}
}

// The names of the processes in the report.
const (
	procServer  = "waitingroom"
	procProxy   = "proxy"
	procOrigin  = "origin"
	procGateway = "gateway"
	procTool    = "load tool"
)
