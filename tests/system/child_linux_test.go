package system_test

import "syscall"

// childAttr makes the kernel kill a child projector process when the test
// binary dies, so a failed or interrupted test leaves no orphan behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
