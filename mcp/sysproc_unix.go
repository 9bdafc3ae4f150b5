//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// killGroup signals the child's whole process group: SIGTERM when polite,
// else SIGKILL.
func killGroup(cmd *exec.Cmd, polite bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGKILL
	if polite {
		sig = syscall.SIGTERM
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
