package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill redis-server if the test binary dies
// without running its cleanups.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
