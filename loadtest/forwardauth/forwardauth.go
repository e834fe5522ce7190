package forwardauth

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// What the scenario speaks of the server's forward auth (server/gateway:
// AuthPath, VisitCookie; server/pass: HeaderName).
const (
	authPath   = "/_wr/auth"
	passHeader = "Waitingroom-Pass"
	// gotPassHeader is the origin's answer header saying whether the
	// request brought a pass (origin.conf).
	gotPassHeader = "Origin-Got-Pass"
)

func visitCookie(room string) string { return "wr_visit_" + room }

// proxyAddr is the address the tool asks /_wr/auth from, as the proxy
// does: the server's WR_TRUSTED_PROXIES.
var proxyAddr = net.IPv4(127, 0, 0, 1)

// The paths asked about: the server protects GET /checkout/* (WR_PROTECT);
// the origin answers its page for any path.
const (
	openURI      = "/products/1"
	protectedURI = "/checkout/cart"
)

// visitSlack is how long a visit must outlast a phase.
const visitSlack = 10 * time.Second

// faConfig is the scenario's flags.
type faConfig struct {
	conns, visitors     int
	warm, dur           time.Duration
	serverBin, nginxBin string
	template            string
	redisURL            string
	redisDB             int
}

func faFlags(fs *flag.FlagSet) func() (faConfig, error) {
	var c faConfig
	redisDefault := os.Getenv("REDIS_URL")
	if redisDefault == "" {
		redisDefault = "redis://127.0.0.1:6379/0"
	}
	fs.IntVar(&c.conns, "conns", 64, "concurrent keep-alive connections of each phase, each sending its next request when the answer is read")
	fs.IntVar(&c.visitors, "visitors", 0, "visitors admitted before the phases, connection i sending visitor i mod N's cookies (0: one per connection; the scenario raises the room's sessionInFlight to its most, 1000, which bounds one visit's decisions)")
	fs.DurationVar(&c.dur, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&c.warm, "warmup", 2*time.Second, "unmeasured warm-up of each phase (opens the connections)")
	fs.StringVar(&c.serverBin, "server-bin", "", "the waitingroom binary to start (default: go build waitingroom/cmd/waitingroom into the run's directory)")
	fs.StringVar(&c.nginxBin, "nginx", "", "the nginx binary (default: nginx on PATH, else /usr/sbin/nginx)")
	fs.StringVar(&c.template, "nginx-template", "", "the proxy's nginx configuration, rendered as envsubst '${LISTEN_ADDR} ${WAITINGROOM_ADDR} ${ORIGIN_ADDR}' does (default: "+shippedTemplate+", from the working directory up); nginx → origin is the same with its auth_request line off")
	fs.StringVar(&c.redisURL, "redis", redisDefault, "the Redis of the server the scenario starts (default $REDIS_URL); its database is --redis-db")
	fs.IntVar(&c.redisDB, "redis-db", 11, "the database number of --redis the server uses: it must hold no key at the start, and is emptied (FLUSHDB) at the end")
	return func() (faConfig, error) {
		if c.conns < 1 || c.dur <= 0 || c.warm < 0 || c.redisDB < 0 || c.visitors < 0 {
			return c, errors.New("--conns and --duration must be positive, --visitors, --warmup and --redis-db not negative")
		}
		if c.visitors == 0 {
			c.visitors = c.conns
		}
		return c, nil
	}
}

// Run is the forward-auth scenario: args are its flags; o gets the common
// ones (of which only --room, --timeout, --out and --html are used: the
// scenario starts its own server).
func Run(ctx context.Context, o *scenario.Options, args []string) (_ report.Report, err error) {
	fs := scenario.NewFlagSet("forward-auth", o)
	if f := fs.Lookup("room"); f != nil {
		f.DefValue = "sale"
		_ = f.Value.Set("sale")
	}
	configOf := faFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	c, err := configOf()
	if err != nil {
		return nil, fmt.Errorf("forward-auth: %w", err)
	}
	rep := &faReport{Scenario: "forward-auth", Room: o.Room, CPUs: runtime.NumCPU(), Conns: c.conns, Visitors: c.visitors,
		WarmupSeconds: c.warm.Seconds(), Seconds: c.dur.Seconds(), PageBytes: pageBytes,
		OpenURI: openURI, ProtectedURI: protectedURI, LoadBefore: measure.LoadAverage()}
	st, err := startStack(ctx, c, o.Room)
	if err != nil {
		return nil, fmt.Errorf("forward-auth: %w", err)
	}
	defer func() {
		if cerr := st.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("forward-auth: %w", cerr))
		}
	}()
	rep.Nginx, rep.Redis, rep.ProxyWorkers = st.nginxVersion, st.redisURL, st.proxyWorkers
	rep.ProxyConfig = relToWorkdir(st.template)

	wr := "http://" + st.wrAddr
	admin := client.NewFrom(proxyAddr, 2, o.Timeout)
	p := &probe{srcs: st.cpuSources(), adm: &client.Admin{Base: "http://" + st.adminAddr, HTTP: admin}}
	pg := &probe{srcs: p.srcs, adm: &client.Admin{Base: "http://" + st.gwAdmin, HTTP: admin}}
	hc := client.NewFrom(proxyAddr, c.conns, o.Timeout)
	// The visitors of each waiting room: forward auth's and the gateway's.
	visits := map[bool][]visit{}
	for _, s := range faSteps(rep, st, wr) {
		if ctx.Err() != nil {
			break
		}
		// Every phase of one waiting room sends the same cookies, admitted
		// visitors', so the requests differ only in their path.
		base := wr
		if s.gateway {
			base = "http://" + st.gwAddr
		}
		if vs := visits[s.gateway]; time.Until(firstEnd(vs)) < c.warm+c.dur+visitSlack {
			fmt.Fprintf(os.Stderr, "forward-auth: admitting %d visitors to %s at %s\n", c.visitors, o.Room, base)
			if vs, err = admitAll(ctx, c.visitors, base, o.Room, protectedURI, o.Timeout, s.gateway); err != nil {
				if ctx.Err() != nil {
					break
				}
				return rep, fmt.Errorf("forward-auth: %w", err)
			}
			if left := time.Until(firstEnd(vs)); left < c.warm+c.dur+visitSlack {
				return rep, fmt.Errorf("forward-auth: a visit lasts %v, less than a phase (--warmup + --duration) and %v", left.Round(time.Second), visitSlack)
			}
			visits[s.gateway] = vs
		}
		hs := s.headers(visits[s.gateway])
		fmt.Fprintf(os.Stderr, "forward-auth: %s: %d conns, %v warm-up + %v\n", s.name, c.conns, c.warm, c.dur)
		probe := p
		if s.gateway {
			probe = pg
		}
		*s.dst = probe.measure(ctx, hc, s.name, target{url: s.url, headers: hs, passed: s.passed}, c.conns, c.warm, c.dur)
		if err := st.alive(); err != nil {
			rep.finish()
			return rep, fmt.Errorf("forward-auth: %s: %w", s.name, err)
		}
	}
	rep.Interrupted = ctx.Err() != nil
	rep.LoadAfter = measure.LoadAverage()
	rep.finish()
	return rep, nil
}

// relToWorkdir is path relative to the working directory, or path itself
// when it has none.
func relToWorkdir(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil {
		return rel
	}
	return path
}

// faStep is one measured phase: where its result goes, its name, the URL
// it loads, the URI asked about (for /_wr/auth itself, else "") and how a
// response shows the request went through; gateway: the phase goes
// through the waiting room in gateway mode, with its visitors.
type faStep struct {
	dst     **phase
	name    string
	url     string
	ask     string
	passed  func(http.Header) bool
	gateway bool
}

// faSteps are the phases in the order they run: the decision alone
// (wr is the waiting room's base URL), then nginx without and with it,
// then the gateway in nginx's place.
func faSteps(rep *faReport, st *stack, wr string) []faStep {
	decided := func(h http.Header) bool { return h.Get(passHeader) != "" }
	reached := func(h http.Header) bool { return h.Get(gotPassHeader) == "1" }
	return []faStep{
		{&rep.DecideOpen, "decide: unprotected", wr + authPath, openURI, decided, false},
		{&rep.DecideVisit, "decide: protected, visit", wr + authPath, protectedURI, decided, false},
		{&rep.Direct, "nginx → origin", "http://" + st.directAddr + openURI, "", reached, false},
		{&rep.AuthOpen, "nginx auth: unprotected", "http://" + st.authAddr + openURI, "", reached, false},
		{&rep.AuthVisit, "nginx auth: protected, visit", "http://" + st.authAddr + protectedURI, "", reached, false},
		{&rep.GatewayOpen, "gateway: unprotected", "http://" + st.gwAddr + openURI, "", reached, true},
		{&rep.GatewayVisit, "gateway: protected, visit", "http://" + st.gwAddr + protectedURI, "", reached, true},
	}
}

// headers are the request headers of each visitor in vs for s: their
// cookie, asked about s.ask when the phase calls /_wr/auth itself.
func (s faStep) headers(vs []visit) []http.Header {
	hs := make([]http.Header, len(vs))
	for i, v := range vs {
		hs[i] = http.Header{}
		if s.ask != "" {
			askAbout(hs[i], http.MethodGet, s.ask, v.cookie)
		} else {
			hs[i].Set("Cookie", v.cookie)
		}
	}
	return hs
}

// firstEnd is when the first of vs's visits ends (the zero time for
// none).
func firstEnd(vs []visit) time.Time {
	var t time.Time
	for i, v := range vs {
		if i == 0 || v.expires.Before(t) {
			t = v.expires
		}
	}
	return t
}
