package fuzzroutes

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGrace bounds the wait for a process to exit after SIGTERM; then it
// is killed.
const stopGrace = 5 * time.Second

// proc is a process the stack started: its output goes to a file of the
// run's directory.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// startProc runs bin with args from dir with env added to this process's
// environment, its output in logDir/<name>.log. It is a process group of
// its own (stop ends the group: nginx's workers, php's workers) and gets
// SIGTERM if the tool dies first.
func startProc(logDir, dir, name string, env []string, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(logDir, name+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, fmt.Errorf("fuzzroutes: %s: %w", name, err)
	}
	defer out.Close() // the child holds its own copy
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Dir = append(os.Environ(), env...), dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("fuzzroutes: start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// running is nil while the process runs, else why it ended, with the end
// of its output.
func (p *proc) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("fuzzroutes: %s exited (%v):\n%s", p.name, p.err, tailOf(p.log))
	default:
		return nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace. A
// process that had exited before is an error.
func (p *proc) stop() error {
	pid := p.cmd.Process.Pid
	select {
	case <-p.exited:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("fuzzroutes: %s exited before the end of the run (%v):\n%s", p.name, p.err, tailOf(p.log))
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.exited
	}
	// What is left of the group (a master's workers) goes too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return nil
}

// tailOf is the last lines of file.
func tailOf(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "(none: " + err.Error() + ")"
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimRight(string(b), "\n")
}

// awaitListening waits until addr accepts connections, at most within,
// giving up at once when p exits.
func (p *proc) awaitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if err := p.running(); err != nil {
			return err
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fuzzroutes: %s: not listening on %s within %v: %w", p.name, addr, within, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll: nothing to be told of
	}
}

// freeAddr is a loopback address no one listens on (a moment ago), its
// port below the kernel's ephemeral range: Caddy binds its port on every
// interface, and that bind fails while a connection of this machine uses
// the port as its own end, which a port of the ephemeral range often is.
func freeAddr() (string, error) {
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return "127.0.0.1:" + strconv.Itoa(port), nil
	}
	return "", errors.New("fuzzroutes: no free port between 10000 and the ephemeral range")
}
