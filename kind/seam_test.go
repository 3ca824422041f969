package kind_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/kind"
)

// seamDirs are the directories (relative to this package) whose non-test
// Go files must know release kinds only through package kind: no kind's
// name as a string literal, no import of a kind's package.
var seamDirs = []string{"../stages", "../internal/pipeline"}

// logCalls are the functions and methods whose string arguments are log
// messages and attribute keys (slog's), which may happen to be a kind's
// name ("count") without being about a kind.
var logCalls = map[string]bool{
	"Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true, "LogAttrs": true, "With": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
	"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true, "Bool": true,
	"Any": true, "Duration": true, "Time": true, "Group": true,
}

// TestNoKindOutsideTheSeam: a release kind is one package under kind/; the
// stages and the pipeline reach it through kind.Plan, kind.Statistic and
// the registry only. A kind name as a string literal (a switch on the
// kind) or an import of a kind's package there is a per-kind branch that
// adding a kind would have to touch.
func TestNoKindOutsideTheSeam(t *testing.T) {
	names := map[string]bool{}
	for _, n := range kind.Names() {
		names[n] = true
	}
	if len(names) < 7 {
		t.Fatalf("only %d kinds registered: %v", len(names), kind.Names())
	}
	const kindPkg = "github.com/dpstream/dpstream/kind/"
	files := 0
	for _, dir := range seamDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, kindPkg) {
					t.Errorf("%s: imports %s; use package kind", fset.Position(imp.Pos()), p)
				}
			}
			logArgs := map[*ast.BasicLit]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && logCalls[sel.Sel.Name] {
						for _, a := range call.Args {
							if lit, ok := a.(*ast.BasicLit); ok {
								logArgs[lit] = true
							}
						}
					}
				}
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || logArgs[lit] {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s: the kind name %q; ask the kind's Plan instead", fset.Position(lit.Pos()), s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 10 {
		t.Fatalf("only %d files scanned in %v", files, seamDirs)
	}
}
