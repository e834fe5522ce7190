package systemtest

import (
	"os/exec"
	"syscall"
)

// endWithTest makes the kernel send cmd SIGTERM when the OS thread that
// starts it exits, so that a proxy does not outlive a test binary that
// died (a -timeout panic runs no cleanups). The thread, not the process:
// cmd must be started and waited for by one goroutine locked to its
// thread (RunProxy).
func endWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
