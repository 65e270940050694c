package azurite

import "syscall"

// sysProcAttr makes the kernel kill Azurite when the process that started it
// dies, so a crashed or killed test binary leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Pause freezes the server process (SIGSTOP): connections are accepted by
// the kernel but nothing answers, as a hung store. Resume continues it.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
