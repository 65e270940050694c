package azurite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Run is for TestMain: it starts one Azurite for the whole test binary,
// stores it in *srv, runs the tests and stops the server. It returns the exit
// code for os.Exit. If Azurite cannot start, Run prints why (including "run
// `make azurite`" when it is not installed) and returns 1: the tests fail,
// they are not skipped.
//
//	func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &srv)) }
func Run(m *testing.M, srv **Server) int {
	s, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Shared is one Azurite for a whole test binary, started by the first test
// that asks for it (Get) rather than by TestMain: the tests of the binary
// that need no Azurite run without one installed. RunShared stops it.
//
//	var az azurite.Shared
//
//	func TestMain(m *testing.M) { os.Exit(azurite.RunShared(m, &az)) }
//
//	func TestX(t *testing.T) { conn := az.Get(t).ConnectionString() ... }
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Get returns the binary's server, starting it the first time. If Azurite
// cannot start, the test fails (it is not skipped) and says why, including
// "run `make azurite`" when it is not installed; so does every later Get.
func (s *Shared) Get(tb testing.TB) *Server {
	tb.Helper()
	s.once.Do(func() { s.srv, s.err = Start(context.Background()) })
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.srv
}

// Stop stops the server if a test started it.
func (s *Shared) Stop() error {
	s.once.Do(func() { s.err = errors.New("azurite: the shared server was stopped before a test asked for it") })
	if s.srv == nil {
		return nil
	}
	return s.srv.Stop()
}

// RunShared is for TestMain: it runs the tests and stops the server s if a
// test started it, and returns the exit code for os.Exit.
func RunShared(m *testing.M, s *Shared) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}
