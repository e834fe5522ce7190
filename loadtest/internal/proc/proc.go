// Package proc starts, watches and stops the processes a load-tool
// scenario runs on this machine (the waiting room, origins, proxies), each
// with its output in a file of the run's directory, and builds the
// module's commands for them. A Proc is used by the goroutine that started
// it; its exit is awaited on a goroutine of its own.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Proc is a process a scenario started: its output goes to a file of the
// run's directory.
type Proc struct {
	Name     string
	Log      string // its output
	ErrorLog string // a log of its own besides its output (nginx's error.log), or ""

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// Start runs bin with args from dir with env (nil: this process's), its
// output in logDir/<name>.log. It is a process group of its own: a Ctrl-C
// at the terminal reaches the load tool alone, which stops the processes
// in order once it has reported, and a stop can end the group (nginx's
// workers, php's workers). It gets SIGTERM if the tool dies first.
func Start(logDir, dir, name string, env []string, bin string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, Log: filepath.Join(logDir, name+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own copy
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Dir = env, dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Running is nil while the process runs, else why it ended, with the end
// of its output.
func (p *Proc) Running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v):\n%s", p.Name, p.err, p.Tail())
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits for the exit, at most grace, then kills
// the process. An exit other than the one SIGTERM asks for is an error,
// and so is a process that had exited before. Then what is left of its
// process group gets SIGTERM: an nginx master's workers outlive it when it
// is killed.
func (p *Proc) Stop(grace time.Duration) error {
	defer func() { _ = syscall.Kill(-p.Pid(), syscall.SIGTERM) }()
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited before the end of the run (%v):\n%s", p.Name, p.err, p.Tail())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if p.err != nil && !(errors.As(p.err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM) {
			return fmt.Errorf("%s exited with %v after SIGTERM:\n%s", p.Name, p.err, p.Tail())
		}
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM: killed", p.Name, grace)
	}
}

// StopGroup ends the process group: SIGTERM, then SIGKILL after grace,
// then SIGKILL for what is left of the group (a master's workers). How
// the process exits once told is not checked; a process that had exited
// before is an error.
func (p *Proc) StopGroup(grace time.Duration) error {
	pid := p.Pid()
	select {
	case <-p.exited:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("%s exited before the end of the run (%v):\n%s", p.Name, p.err, p.Tail())
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.exited
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return nil
}

// Tail is the last lines of the process's output, and of its error log.
func (p *Proc) Tail() string {
	t := TailOf(p.Log)
	if p.ErrorLog != "" {
		t += "\n" + filepath.Base(p.ErrorLog) + ":\n" + TailOf(p.ErrorLog)
	}
	return t
}

// TailOf is the last lines of file.
func TailOf(file string) string {
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

// AwaitListening waits until addr accepts connections, at most within,
// giving up at once when p exits.
func (p *Proc) AwaitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if err := p.Running(); err != nil {
			return err
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not listening on %s within %v: %w", p.Name, addr, within, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll: nothing to be told of
	}
}

// GoBuild builds the module's package pkg into dir/name, with the go
// command on the PATH or else this toolchain's; it must run from within
// the module.
func GoBuild(dir, name, pkg string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	path := filepath.Join(dir, name)
	if out, err := exec.Command(goTool, "build", "-o", path, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s (from within the module): %w\n%s", pkg, err, out)
	}
	return path, nil
}
