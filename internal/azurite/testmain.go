package azurite

import (
	"context"
	"fmt"
	"os"
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
