package azurite

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.ConnectionString(), "TableEndpoint="+s.Endpoint()) {
		t.Errorf("connection string %q lacks endpoint %s", s.ConnectionString(), s.Endpoint())
	}
	resp, err := http.Get(s.Endpoint() + "/Tables")
	if err != nil {
		t.Fatalf("server not answering: %v", err)
	}
	resp.Body.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := http.Get(s.Endpoint() + "/Tables"); err == nil {
		t.Error("server still answering after Stop")
	}
}

func TestBinaryMissing(t *testing.T) {
	t.Setenv(EnvBinary, "")
	t.Chdir(t.TempDir())
	_, err := Binary()
	if err == nil || !strings.Contains(err.Error(), "make azurite") {
		t.Fatalf("err = %v, want a hint to run make azurite", err)
	}
	t.Setenv(EnvBinary, "/nonexistent/azurite-table")
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "make azurite") {
		t.Fatalf("err = %v, want a hint to run make azurite", err)
	}
}

// TestSharedStartsOnDemand: a Shared no test asked for starts nothing, and
// stopping it then is no error.
func TestSharedStartsOnDemand(t *testing.T) {
	var s Shared
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop without Get: %v", err)
	}
	if s.srv != nil || s.err == nil {
		t.Fatalf("after Stop without Get: server %v, err %v; want none started and Get refused", s.srv, s.err)
	}
}
