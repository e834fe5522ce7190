package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"waitingroom/loadtest/attack"
	"waitingroom/loadtest/ceiling"
	"waitingroom/loadtest/crowd"
	"waitingroom/loadtest/forwardauth"
	"waitingroom/loadtest/fuzzroutes"
	"waitingroom/loadtest/gatewayattack"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/poll"
	"waitingroom/loadtest/resetroom"
	"waitingroom/loadtest/rooms"
	"waitingroom/loadtest/seed"
	"waitingroom/loadtest/streams"
	"waitingroom/loadtest/surge"
)

// scenarios are the subcommands, each the Run of its package. Each parses
// its own flags (scenario.NewFlagSet adds the common ones to o), runs, and
// returns what it measured — also when it was interrupted — together with
// any error.
var scenarios = []struct {
	name, about string
	run         func(ctx context.Context, o *scenario.Options, args []string) (report.Report, error)
}{
	{"seed", "the seed's k6 test: VUs loop login → enter → poll every 0.5 s → order; /metrics before and after", seed.Run},
	{"poll", "poll-path throughput against a plain Fiber baseline (in-process, or --baseline-process), and login (BCrypt) cost; --limit: enter and the poll at the front against the plain handler and the Redis floor (plain + one EVALSHA)", poll.Run},
	{"streams", "N waiting users each hold an SSE or WebSocket stream while admissions run: fan-out lag, RSS per stream", streams.Run},
	{"surge", "N shoppers arrive (a burst and a trickle), wait by SSE, WebSocket or polling — some abandon, reload or never show — and order after a think time: FIFO, ETA accuracy over the wait, active cap, lost users", surge.Run},
	{"attack", "the surge alone, then beside attacks from other addresses (stuffing, storm, idle sockets, streams, bombs, cross-site): both side by side", attack.Run},
	{"gateway-attack", "anonymous visitors through a gateway-mode server in front of an origin the tool starts, alone then beside the gateway attacks (upgrade smuggling, route variants, slow readers, large bodies, session sharing, stuffing)", gatewayattack.Run},
	{"forward-auth", "forward auth: /_wr/auth decisions/s and server CPU per decision, then nginx with auth_request (unprotected, protected with a visit) against nginx straight to a static origin; starts the server, nginx and the origin itself", forwardauth.Run},
	{"fuzz-routes", "differential fuzzing of protected routes: mutated spellings of WR_PROTECT's routes, sent byte for byte through the gateway, nginx and Caddy in forward auth to seven real routers' origins (Express, Fastify, ServeMux, Flask, Django, Sinatra, PHP); reports every protected handler reached without a pass", fuzzroutes.Run},
	{"ceiling", "one room on one Redis shard, no server: pipelined enters until Redis saturates; --costs: Redis CPU per operation of each kind; --fill N: memory per waiting user", ceiling.Run},
	{"rooms", "R idle rooms beside one busy room on I running instances: Redis and instance CPU over an idle window, and the busy room's READY latency, alone then among the R", rooms.Run},
	{"crowd", "a steady crowd of simulated shoppers for a demo: N kept waiting, admitted ones order, some give up, new ones arrive; until interrupted", crowd.Run},
	{"reset-room", "wait for the server, then put a room back to the demo's settings (targetActive, fixed, not paused, fifo, no opening)", resetroom.Run},
}

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") || os.Args[1] == "help" {
		usage(os.Stderr)
		return 2
	}
	name := os.Args[1]
	if name == poll.PlainHandlerCmd {
		return poll.PlainHandlerMain()
	}
	i := 0
	for i < len(scenarios) && scenarios[i].name != name {
		i++
	}
	if i == len(scenarios) {
		fmt.Fprintf(os.Stderr, "loadtest: unknown scenario %q\n", name)
		usage(os.Stderr)
		return 2
	}

	// Ctrl-C ends the run early; the report is still printed. A second
	// Ctrl-C kills the process (stop restores the default handling).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	if n, err := raiseNoFile(); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest: RLIMIT_NOFILE:", err)
	} else {
		fmt.Fprintf(os.Stderr, "loadtest: %s: open-file limit %d\n", name, n)
	}

	var o scenario.Options
	rep, err := scenarios[i].run(ctx, &o, os.Args[2:])
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if rep != nil {
		rep.Print(os.Stdout)
		if o.Out != "" {
			if werr := report.WriteJSON(o.Out, rep); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		if o.HTML != "" {
			if werr := report.WriteHTML(o.HTML, rep); werr != nil {
				err = errors.Join(err, werr)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: go run ./loadtest <scenario> [flags]   (<scenario> -h lists its flags)")
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-8s %s\n", s.name, s.about)
	}
}

// raiseNoFile lifts the soft RLIMIT_NOFILE to the hard limit — every
// connection is a file descriptor — and returns the limit in force. (Go's
// os package does the same at start on Linux; doing it here keeps it
// explicit and lets the tool say the figure.)
func raiseNoFile() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	return l.Cur, nil
}
