package systemtest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"waitingroom/queue/queuetest"
)

// FrontProxy is one shipped configuration and how its server runs it.
type FrontProxy struct {
	Name     string // the binary, and the subtest's name
	Template string // under deploy/forward-auth
	Conf     string // the rendered file's name in the prefix folder
	args     func(dir string) []string
}

var FrontProxies = []FrontProxy{
	{Name: "nginx", Template: "nginx.conf.template", Conf: "nginx.conf", args: func(dir string) []string {
		return []string{"-p", dir, "-c", "nginx.conf", "-g", "daemon off;"}
	}},
	{Name: "caddy", Template: "Caddyfile.template", Conf: "Caddyfile", args: func(dir string) []string {
		return []string{"run", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile"}
	}},
}

// ProxyBinary is the path of p's server: on PATH, or where Debian puts it
// (nginx is in /usr/sbin, off a normal user's PATH).
func ProxyBinary(t *testing.T, p FrontProxy) string {
	t.Helper()
	bin, err := exec.LookPath(p.Name)
	if err == nil {
		return bin
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, serr := os.Stat(filepath.Join(dir, p.Name)); serr == nil {
			return filepath.Join(dir, p.Name)
		}
	}
	t.Fatalf("the forward-auth proxy tests need %s (%v): run `make test`, which installs it, or `apt-get install %s`", p.Name, err, p.Name)
	return ""
}

// PrefixDir is a fresh folder for a proxy's files, removed at the end. It
// is searchable by everyone: nginx run as root has its workers run as
// nobody, and they write the temporary files under it.
func PrefixDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wr-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunProxy starts bin on the configuration in dir and waits until it
// accepts connections on listen, or exits (its output is then returned
// with the error).
func RunProxy(t *testing.T, p FrontProxy, bin, dir, listen string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, p.args(dir)...)
	cmd.Dir = dir
	// Caddy keeps its state in the user's folders: HOME puts them in dir.
	cmd.Env = append(withoutEnv(os.Environ(), "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"), "HOME="+dir)
	out := &queuetest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// A group of its own: if it must be killed, its workers (nginx's)
	// go with it, and with them the pipe Wait reads to its end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	endWithTest(cmd)
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// The thread that starts cmd stays with it until it exits
		// (endWithTest).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return "", err
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM) // both: a fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s's output:\n%s", p.Name, out)
			for _, f := range []string{"error.log", "access.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && len(b) > 0 {
					t.Logf("%s's %s:\n%s", p.Name, f, b)
				}
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
			c.Close()
			return "", nil
		}
		select {
		case err := <-exited:
			stopped = true
			if err == nil {
				err = errors.New("exited")
			}
			return out.String(), err
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return out.String(), errors.New("not listening after 20 s")
		}
	}
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
