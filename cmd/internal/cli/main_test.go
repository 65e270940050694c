package cli

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"testing"
)

// TestMainStopsSignalRelay: Main returns the exit code of the command's
// error, and its deferred stop has run by then (the command's context is
// done), so a main that calls os.Exit with Main's result skips nothing.
func TestMainStopsSignalRelay(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{UsageError(errors.New("bad")), ExitUsage},
		{errors.New("boom"), ExitFailure},
	}
	for _, tt := range tests {
		var seen context.Context
		code := Main(func(ctx context.Context, _ []string, _ IO) error {
			seen = ctx
			if ctx.Err() != nil {
				t.Error("context done before the command ran")
			}
			return tt.err
		}, nil, IO{Stdout: io.Discard, Stderr: io.Discard})
		if code != tt.want {
			t.Errorf("%v: exit %d, want %d", tt.err, code, tt.want)
		}
		if seen.Err() == nil {
			t.Errorf("%v: the signal relay was not stopped when Main returned", tt.err)
		}
	}
}

// TestMainsExitAfterDefers: no function in cmd/*/main.go both defers a
// call and calls os.Exit, which would skip the deferred call.
func TestMainsExitAfterDefers(t *testing.T) {
	files, err := filepath.Glob("../../*/main.go")
	if err != nil || len(files) < 3 {
		t.Fatalf("mains: %v %v", files, err)
	}
	for _, f := range files {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			var defers, exits bool
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.DeferStmt:
					defers = true
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == "os" && n.Sel.Name == "Exit" {
						exits = true
					}
				}
				return true
			})
			if defers && exits {
				t.Errorf("%s: %s calls os.Exit after a defer, which then never runs", f, fn.Name.Name)
			}
		}
	}
}
