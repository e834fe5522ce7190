package poll

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// PlainHandlerCmd is the hidden command that serves the yardstick in a
// process of its own (poll --baseline-process): the load tool starts
// itself with it.
const PlainHandlerCmd = "plain-handler"

// startBaseline serves the yardstick: a plain Fiber app on 127.0.0.1:0 with
// one route (any method) whose handler encodes a fixed document with
// c.JSON — the server's own answer (WAITING, or enter's), so both bodies
// have the same size. In this process, or (own) in a process of its own,
// as the server runs: inside the load tool the handler shares the tool's
// Go runtime and network poller, so an answer crosses no process boundary
// and costs the machine less than the same handler would elsewhere. It
// returns the route's URL and a func that stops the app.
func startBaseline(body []byte, own bool) (string, func(), error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", nil, fmt.Errorf("poll: baseline document: %w", err)
	}
	if own {
		return startBaselineProcess(body)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("poll: baseline: %w", err)
	}
	stop := servePlain(ln, doc)
	return "http://" + ln.Addr().String() + "/position", stop, nil
}

// servePlain serves doc on ln until the returned stop is called.
func servePlain(ln net.Listener, doc map[string]any) (stop func()) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.All("/position", func(c *fiber.Ctx) error { return c.JSON(doc) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Listener(ln) // returns when the app shuts down
	}()
	return func() {
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-done
	}
}

// startBaselineProcess starts this program as PlainHandlerCmd with body on
// its standard input and args after the command's name (the floor's
// flags: floorArgs), and reads the URL it serves on from its first line.
func startBaselineProcess(body []byte, args ...string) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("poll: baseline process: %w", err)
	}
	cmd := exec.Command(self, append([]string{PlainHandlerCmd}, args...)...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, fmt.Errorf("poll: baseline process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("poll: baseline process: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		stop()
		return "", nil, fmt.Errorf("poll: baseline process said %q: %v", line, err)
	}
	return strings.TrimSpace(line), stop, nil
}

// PlainHandlerMain runs PlainHandlerCmd and is the process's exit code
// (it returns only on an error; the parent kills it).
func PlainHandlerMain() int {
	if err := runPlainHandler(); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
	}
	return 1
}

// runPlainHandler is PlainHandlerCmd: the document on standard input,
// served on 127.0.0.1:0 (the URL on the first line of standard output)
// until the process is killed; with -redis and -key, by the floor handler
// (serveFloor) instead of the plain one.
func runPlainHandler() error {
	fs := flag.NewFlagSet(PlainHandlerCmd, flag.ContinueOnError)
	redisURL := fs.String("redis", "", "serve the floor: one script call on this Redis per request")
	key := fs.String("key", "", "the floor's key (with -redis)")
	if len(os.Args) < 2 {
		return errors.New("plain-handler: no command name")
	}
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	if (*redisURL == "") != (*key == "") {
		return errors.New("plain-handler: -redis and -key go together")
	}
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return errors.New("plain-handler: standard input is not a JSON object")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if *redisURL != "" {
		if _, err := serveFloor(ln, doc, *redisURL, *key); err != nil {
			return err
		}
	} else {
		servePlain(ln, doc)
	}
	fmt.Printf("http://%s/position\n", ln.Addr())
	select {}
}
