package forwardauth

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopGrace bounds the wait for a process to exit after SIGTERM; then it
// is killed.
const stopGrace = 10 * time.Second

// proc is a process the scenario started: its output goes to a file of
// the run's directory.
type proc struct {
	name     string
	cmd      *exec.Cmd
	log      string
	errorLog string // a log of its own besides its output (nginx's error.log), or ""
	exited   chan struct{}
	err      error // the exit status, once exited is closed
}

// startProc runs bin with args and env (nil: this process's) from dir, its
// output in dir/<name>.log. The process gets SIGTERM if the load tool dies
// first.
func startProc(dir, name string, env []string, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own copy
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Dir = env, dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	// A process group of its own: a Ctrl-C at the terminal reaches the
	// load tool alone, which stops the processes in order once it has
	// reported; and stop can end the group.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// running is nil while the process runs, else why it ended, with the end
// of its output.
func (p *proc) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.tail())
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for the exit, at most stopGrace, then kills
// the process. An exit other than the one SIGTERM asks for is an error.
// Then what is left of its process group gets SIGTERM: an nginx master's
// workers outlive it when it is killed.
func (p *proc) stop() error {
	defer func() { _ = syscall.Kill(-p.pid(), syscall.SIGTERM) }()
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited before the end of the run (%v):\n%s", p.name, p.err, p.tail())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if p.err != nil && !(errors.As(p.err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM) {
			return fmt.Errorf("%s exited with %v after SIGTERM:\n%s", p.name, p.err, p.tail())
		}
		return nil
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM: killed", p.name, stopGrace)
	}
}

// tail is the last lines of the process's output, and of its error log.
func (p *proc) tail() string {
	t := tailOf(p.log)
	if p.errorLog != "" {
		t += "\n" + filepath.Base(p.errorLog) + ":\n" + tailOf(p.errorLog)
	}
	return t
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
			return fmt.Errorf("%s: not listening on %s within %v: %w", p.name, addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
