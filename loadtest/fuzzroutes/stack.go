package fuzzroutes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/freeport"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/proc"
)

// The front doors: the waiting room as the gateway (WR_UPSTREAM), and
// nginx and Caddy from deploy/forward-auth asking it (WR_FORWARD_AUTH).
const (
	FrontGateway = "gateway"
	FrontNginx   = "nginx"
	FrontCaddy   = "caddy"
)

// Fronts are the front doors, in report order.
var Fronts = []string{FrontGateway, FrontNginx, FrontCaddy}

// Protect is the waiting room's WR_PROTECT in every front door.
const Protect = "GET /checkout/*=sale, POST /api/orders=sale"

// stopGrace bounds the wait for a process to exit after SIGTERM; then it
// is killed.
const stopGrace = 5 * time.Second

// running is p.Running with the scenario's prefix.
func running(p *proc.Proc) error {
	if err := p.Running(); err != nil {
		return fmt.Errorf("fuzzroutes: %w", err)
	}
	return nil
}

// startDeadline bounds the wait for each process to be ready.
const startDeadline = 60 * time.Second

// Config is what a stack runs.
type Config struct {
	Origins, Fronts []string // names, of Origins and Fronts
	// RedisURL is the waiting rooms' Redis; its database RedisDB must
	// hold no key, and is emptied at the end.
	RedisURL  string
	RedisDB   int
	ServerBin string    // the waitingroom binary ("": built from the module)
	Log       io.Writer // progress lines (nil: none)
}

// Pair is one front door in front of one origin: where to connect.
type Pair struct {
	Front, Origin string
	Addr          string // host:port, also the Host header
}

// Stack is the running processes: each origin, and each front door in
// front of each. Close stops them all.
type Stack struct {
	Pairs []Pair

	dir     string
	procs   []*proc.Proc // in start order
	origins map[string]*runningOrigin
	rdb     *redis.Client
	ownDB   bool
	log     io.Writer
}

type runningOrigin struct {
	Origin
	addr string
	tail *logTail
}

// Start checks every runtime, then starts the origins and the front
// doors; on error what was started is stopped again.
func Start(ctx context.Context, c Config) (s *Stack, err error) {
	s = &Stack{origins: map[string]*runningOrigin{}, log: c.Log}
	if s.log == nil {
		s.log = io.Discard
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
			s = nil
		}
	}()
	origins, err := s.check(c)
	if err != nil {
		return s, err
	}
	if s.dir, err = os.MkdirTemp("", "wr-fuzz-routes-"); err != nil {
		return s, fmt.Errorf("fuzzroutes: %w", err)
	}
	// nginx's workers run as nobody when nginx starts as root.
	if err = os.Chmod(s.dir, 0o755); err != nil {
		return s, fmt.Errorf("fuzzroutes: %w", err)
	}
	redisURL, err := s.openRedis(ctx, c.RedisURL, c.RedisDB)
	if err != nil {
		return s, err
	}
	serverBin, goOrigin := c.ServerBin, ""
	if serverBin == "" {
		fmt.Fprintln(s.log, "fuzz-routes: building waitingroom/cmd/waitingroom")
		if serverBin, err = goBuild(s.dir, "waitingroom", "waitingroom/cmd/waitingroom"); err != nil {
			return s, err
		}
	}
	if slices.Contains(c.Origins, "gomux") {
		if goOrigin, err = goBuild(s.dir, "gomux", "waitingroom/loadtest/fuzzroutes/origins/gomux"); err != nil {
			return s, err
		}
	}
	for _, o := range origins {
		if err := s.startOrigin(ctx, o.o, o.dir, goOrigin); err != nil {
			return s, err
		}
	}
	var authAddr string
	if slices.Contains(c.Fronts, FrontNginx) || slices.Contains(c.Fronts, FrontCaddy) {
		if authAddr, err = s.startWaitingRoom(ctx, "waitingroom-forward-auth", serverBin, redisURL,
			"WR_FORWARD_AUTH=on", "WR_TRUSTED_PROXIES=127.0.0.1"); err != nil {
			return s, err
		}
	}
	for _, front := range Fronts {
		if !slices.Contains(c.Fronts, front) {
			continue
		}
		for _, o := range origins {
			addr, err := s.startFront(ctx, front, o.o.Name, serverBin, redisURL, authAddr)
			if err != nil {
				return s, err
			}
			s.Pairs = append(s.Pairs, Pair{Front: front, Origin: o.o.Name, Addr: addr})
		}
	}
	return s, nil
}

type originDir struct {
	o   Origin
	dir string
}

// check resolves the names and checks every runtime at once: one error
// lists every missing one.
func (s *Stack) check(c Config) ([]originDir, error) {
	if len(c.Origins) == 0 || len(c.Fronts) == 0 {
		return nil, errors.New("fuzzroutes: no origin or no front door")
	}
	var out []originDir
	var errs []error
	for _, name := range c.Origins {
		o, err := originByName(name)
		if err != nil {
			return nil, err
		}
		dir, err := findUp(filepath.Join("loadtest", "fuzzroutes", "origins", name))
		if err != nil {
			return nil, fmt.Errorf("fuzzroutes: %w", err)
		}
		if err := o.check(dir); err != nil {
			errs = append(errs, fmt.Errorf("origin %s (%s): %w", name, o.About, err))
		}
		out = append(out, originDir{o, dir})
	}
	for _, f := range c.Fronts {
		switch f {
		case FrontGateway:
		case FrontNginx, FrontCaddy:
			if _, err := proxyBinary(f); err != nil {
				errs = append(errs, err)
			}
		default:
			return nil, fmt.Errorf("fuzzroutes: unknown front door %q (known: %v)", f, Fronts)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fuzzroutes: missing runtimes:\n%w", errors.Join(errs...))
	}
	return out, nil
}

// proxyBinary is nginx's or Caddy's path: on PATH, or where Debian puts
// it (nginx is in /usr/sbin, off a normal user's PATH).
func proxyBinary(name string) (string, error) {
	if bin, err := exec.LookPath(name); err == nil {
		return bin, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name), nil
		}
	}
	return "", fmt.Errorf("front door %s: not installed: apt-get install %s (make test does)", name, name)
}

// openRedis connects to database db of the Redis at raw, which must hold
// no key, and returns the URL naming it.
func (s *Stack) openRedis(ctx context.Context, raw string, db int) (string, error) {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: redis URL: %w", err)
	}
	opt.DB = db
	s.rdb = redis.NewClient(opt)
	n, err := s.rdb.DBSize(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: redis %s: %w", opt.Addr, err)
	}
	if n != 0 {
		return "", fmt.Errorf("fuzzroutes: redis %s database %d holds %d keys: the run needs an empty one of its own, which it empties at the end (--redis-db)", opt.Addr, db, n)
	}
	s.ownDB = true
	u, _ := url.Parse(raw) // redis.ParseURL has parsed it
	u.Path = "/" + strconv.Itoa(db)
	return u.String(), nil
}

// goBuild builds pkg into dir/name.
func goBuild(dir, name, pkg string) (string, error) {
	path, err := proc.GoBuild(dir, name, pkg)
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: %w", err)
	}
	return path, nil
}

// startProc runs bin with args from dir with env added to this process's
// environment, its output in logDir/<name>.log (proc.Start).
func startProc(logDir, dir, name string, env []string, bin string, args ...string) (*proc.Proc, error) {
	p, err := proc.Start(logDir, dir, name, append(os.Environ(), env...), bin, args...)
	if err != nil {
		return nil, fmt.Errorf("fuzzroutes: %w", err)
	}
	return p, nil
}

// freeAddr is a loopback address below the ephemeral range, which Caddy
// can bind (freeport.BelowEphemeral).
func freeAddr() (string, error) {
	addr, err := freeport.BelowEphemeral()
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: %w", err)
	}
	return addr, nil
}

// startOrigin starts o from its folder and waits until GET /__ready
// answers.
func (s *Stack) startOrigin(ctx context.Context, o Origin, dir, goOrigin string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	logFile := filepath.Join(s.dir, o.Name+".records")
	if err := os.WriteFile(logFile, nil, 0o666); err != nil {
		return fmt.Errorf("fuzzroutes: %w", err)
	}
	bin, args, env := o.command(dir, goOrigin, addr)
	env = append(env, "ORIGIN_ADDR="+addr, "ORIGIN_LOG="+logFile)
	fmt.Fprintf(s.log, "fuzz-routes: origin %s (%s) on %s\n", o.Name, o.About, addr)
	p, err := startProc(s.dir, dir, "origin-"+o.Name, env, bin, args...)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	if err := p.AwaitListening(addr, startDeadline); err != nil {
		return fmt.Errorf("fuzzroutes: %w", err)
	}
	s.origins[o.Name] = &runningOrigin{Origin: o, addr: addr, tail: &logTail{path: logFile}}
	return awaitAnswer(ctx, p, addr, "/__ready", "ready")
}

// serverEnv is the waiting room's configuration besides its mode: on Redis
// alone, no rate limits, no challenge, the scenario's routes.
func serverEnv(redisURL, httpAddr, adminAddr string, mode ...string) []string {
	return append([]string{"WR_PROTECT=" + Protect, "WR_ROOMS=sale", "WR_DEV=1", "WR_GATEWAY_CHALLENGE=off",
		"WR_RATE_LIMITS=off", "WR_LOG_LEVEL=error", "WR_HTTP_ADDR=" + httpAddr, "WR_ADMIN_ADDR=" + adminAddr,
		"REDIS_URL=" + redisURL, "DATABASE_URL="}, mode...)
}

// startWaitingRoom starts the waiting room in mode and returns its public
// address once it is ready.
func (s *Stack) startWaitingRoom(ctx context.Context, name, bin, redisURL string, mode ...string) (string, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return "", err
	}
	adminAddr, err := freeAddr()
	if err != nil {
		return "", err
	}
	p, err := startProc(s.dir, s.dir, name, serverEnv(redisURL, httpAddr, adminAddr, mode...), bin)
	if err != nil {
		return "", err
	}
	s.procs = append(s.procs, p)
	if err := client.AwaitReady(ctx, "http://"+adminAddr, startDeadline); err != nil {
		return "", errors.Join(fmt.Errorf("fuzzroutes: %s: %w", name, err), running(p))
	}
	return httpAddr, nil
}

// startFront starts front in front of origin and returns where it
// listens.
func (s *Stack) startFront(ctx context.Context, front, origin, serverBin, redisURL, authAddr string) (string, error) {
	o := s.origins[origin]
	name := front + "-" + origin
	if front == FrontGateway {
		return s.startWaitingRoom(ctx, "waitingroom-"+name, serverBin, redisURL, "WR_UPSTREAM=http://"+o.addr)
	}
	bin, err := proxyBinary(front)
	if err != nil {
		return "", err
	}
	template, conf := "nginx.conf.template", "nginx.conf"
	if front == FrontCaddy {
		template, conf = "Caddyfile.template", "Caddyfile"
	}
	tmplPath, err := findUp(filepath.Join("deploy", "forward-auth", template))
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: %w", err)
	}
	raw, err := os.ReadFile(tmplPath)
	if err != nil {
		return "", fmt.Errorf("fuzzroutes: %w", err)
	}
	// The port is free when chosen, not when the proxy binds it: another
	// process may take it meanwhile, then the proxy is started again.
	for attempt := 1; ; attempt++ {
		listen, err := freeAddr()
		if err != nil {
			return "", err
		}
		prefix := filepath.Join(s.dir, name+"-"+strconv.Itoa(attempt))
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			return "", fmt.Errorf("fuzzroutes: %w", err)
		}
		// As envsubst '${LISTEN_ADDR} ${WAITINGROOM_ADDR} ${ORIGIN_ADDR}' renders it.
		text := strings.NewReplacer("${LISTEN_ADDR}", listen, "${WAITINGROOM_ADDR}", authAddr, "${ORIGIN_ADDR}", o.addr).Replace(string(raw))
		if err := os.WriteFile(filepath.Join(prefix, conf), []byte(text), 0o644); err != nil {
			return "", fmt.Errorf("fuzzroutes: %w", err)
		}
		args, env := []string{"-p", prefix, "-c", conf, "-g", "daemon off;"}, []string(nil)
		if front == FrontCaddy {
			args, env = []string{"run", "--config", filepath.Join(prefix, conf), "--adapter", "caddyfile"}, []string{"HOME=" + prefix}
		}
		p, err := startProc(s.dir, prefix, name, env, bin, args...)
		if err != nil {
			return "", err
		}
		s.procs = append(s.procs, p)
		err = p.AwaitListening(listen, startDeadline)
		if err == nil {
			return listen, nil
		}
		if attempt < 3 && strings.Contains(err.Error(), "in use") {
			s.procs = s.procs[:len(s.procs)-1]
			_ = p.StopGroup(stopGrace) // it has exited: the error says so, and is the one above
			continue
		}
		return "", fmt.Errorf("fuzzroutes: %w", err)
	}
}

// Close stops every process, newest first, empties the waiting rooms'
// database and removes the run's folder. A process that had exited
// early is an error.
func (s *Stack) Close() error {
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		if err := s.procs[i].StopGroup(stopGrace); err != nil {
			errs = append(errs, fmt.Errorf("fuzzroutes: %w", err))
		}
	}
	s.procs = nil
	if s.rdb != nil {
		if s.ownDB {
			if err := s.rdb.FlushDB(context.Background()).Err(); err != nil {
				errs = append(errs, fmt.Errorf("fuzzroutes: empty the database: %w", err))
			}
		}
		s.rdb.Close()
		s.rdb = nil
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("fuzzroutes: %w", err))
		}
		s.dir = ""
	}
	return errors.Join(errs...)
}
