//go:build !linux

package azurite

import (
	"errors"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// Pause is not supported here: it needs SIGSTOP.
func (s *Server) Pause() error { return errors.New("azurite: Pause needs Linux") }

// Resume is not supported here.
func (s *Server) Resume() error { return errors.New("azurite: Resume needs Linux") }
