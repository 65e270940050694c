package azurite

import "syscall"

// sysProcAttr makes the kernel kill Azurite when the process that started it
// dies, so a crashed or killed test binary leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
